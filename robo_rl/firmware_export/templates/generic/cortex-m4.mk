# Cortex-M4F build of the exported policy @@POLICY_NAME@@: one object file to link into your firmware, and its
# size (text = code + constants in flash, data = initialized RAM, bss = zeroed RAM).
CC = arm-none-eabi-gcc
SIZE = arm-none-eabi-size
CPU = -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
CFLAGS ?= -O2 -std=c99 -Wall -Wextra -Werror

@@SOURCE_STEM@@.o: @@POLICY_SOURCE@@ @@POLICY_HEADER@@
	$(CC) $(CPU) $(CFLAGS) -c -o $@ $<
	$(SIZE) $@

.PHONY: clean
clean:
	rm -f @@SOURCE_STEM@@.o
