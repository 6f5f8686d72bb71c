/* Host build of the hand-over scenarios (handover_scenarios.c): prints the trace on stdout. */
#include <stdio.h>

#include "handover_scenarios.c"

static void write_stdout(const char *text)
{
    fputs(text, stdout);
}

int main(void)
{
    return handover_scenarios_run(write_stdout);
}
