/* Arm semihosting on M-profile: `bkpt 0xAB` with the operation number in r0 and its argument in r1. */
#include "semihosting.h"

#define SYS_WRITE0 0x04u
#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define ADP_STOPPED_RUNTIME_ERROR_UNKNOWN 0x20023u

static void semihosting_call(unsigned int operation, const void *argument)
{
    register unsigned int r0 __asm__("r0") = operation;
    register const void *r1 __asm__("r1") = argument;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
}

void semihosting_write(const char *text)
{
    semihosting_call(SYS_WRITE0, text);
}

void semihosting_exit(int status)
{
    /* On 32-bit targets SYS_EXIT takes the stop reason itself in r1 (not a pointer): QEMU maps
     * "application exit" to status 0 and any other reason to status 1. */
    unsigned int reason = status == 0 ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUNTIME_ERROR_UNKNOWN;
    semihosting_call(SYS_EXIT, (const void *)reason);
    for (;;) {
    }
}
