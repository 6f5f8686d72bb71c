/* QEMU (mps2-an386, Cortex-M4F) build of the hand-over scenarios (handover_scenarios.c): prints the trace over
 * semihosting. Linked with firmware_export/templates/qemu's startup code, semihosting calls and linker script. */
#include "semihosting.h"

#include "handover_scenarios.c"

int main(void)
{
    return handover_scenarios_run(semihosting_write);
}
