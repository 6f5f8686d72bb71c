/* Vector table and reset handler for the QEMU `mps2-an386` test firmware (Cortex-M4F). */
#include <stdint.h>

#include "semihosting.h"

extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end, __stack_top;

int main(void);
void reset_handler(void);
void fault_handler(void);

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define CPACR_CP10_CP11_FULL (0xFu << 20)

typedef void (*vector_t)(void);

/* Initial stack pointer, reset, then NMI, HardFault, MemManage, BusFault, UsageFault: any fault ends the run
 * with a message and a failing exit status instead of hanging QEMU. */
__attribute__((section(".vectors"), used)) static const vector_t vectors[] = {
    (vector_t)(uintptr_t)&__stack_top, reset_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, fault_handler,
};

void fault_handler(void)
{
    semihosting_write("ROBO_RL_QEMU FAULT\n");
    semihosting_exit(1);
}

void reset_handler(void)
{
    /* The FPU is off at reset: grant full access to CP10/CP11 before any floating-point instruction runs. */
    SCB_CPACR |= CPACR_CP10_CP11_FULL;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    const uint32_t *source = &__data_load;
    for (uint32_t *target = &__data_start; target < &__data_end;) {
        *target++ = *source++;
    }
    for (uint32_t *target = &__bss_start; target < &__bss_end;) {
        *target++ = 0u;
    }
    semihosting_exit(main());
}
