/* Minimal Arm semihosting calls (SYS_WRITE0, SYS_EXIT) for the QEMU test firmware: no libc stdio needed. */
#ifndef ROBO_RL_QEMU_SEMIHOSTING_H
#define ROBO_RL_QEMU_SEMIHOSTING_H

/* Writes a NUL-terminated string to the host's debug console. */
void semihosting_write(const char *text);

/* Ends the emulation: QEMU exits with status 0 when `status` is 0, else with status 1. */
void semihosting_exit(int status) __attribute__((noreturn));

#endif
