/*
 * Example host program for the exported policy @@POLICY_NAME@@ (task @@TASK@@).
 * Runs the policy once on an all-zero observation and prints each action (a policy with memory: one step from
 * its reset state; a controller carries the state from step to step and resets it where the header says).
 * Build and run: make && ./policy_example
 */
#include <stdio.h>

#include "@@POLICY_HEADER@@"

int main(void)
{
    static const char *const action_names[@@PREFIX@@_ACTION_DIM] = {@@ACTION_NAME_LIST@@};
    float obs[@@PREFIX@@_OBS_DIM] = {0.0f};
    float action[@@PREFIX@@_ACTION_CHUNK * @@PREFIX@@_ACTION_DIM];
    int i;
#ifdef @@PREFIX@@_STATE_SIZE
    float state[@@PREFIX@@_STATE_SIZE];
    int code;

    @@prefix@@_policy_reset(state);
    code = @@prefix@@_policy_step(obs, state, action, state);
#else
    int code = @@prefix@@_policy(obs, action);
#endif

    if (code != @@PREFIX@@_OK) {
        fprintf(stderr, "@@prefix@@_policy returned error code %d\n", code);
        return 1;
    }
    for (i = 0; i < @@PREFIX@@_ACTION_DIM; ++i) {
        printf("%s %.9g\n", action_names[i], (double)action[i]);
    }
    return 0;
}
