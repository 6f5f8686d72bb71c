/*
 * Example host program for the exported policy @@POLICY_NAME@@ (task @@TASK@@).
 * Runs the policy once on an all-zero observation and prints each action.
 * Build and run: make && ./policy_example
 */
#include <stdio.h>

#include "@@POLICY_HEADER@@"

int main(void)
{
    static const char *const action_names[@@PREFIX@@_ACTION_DIM] = {@@ACTION_NAME_LIST@@};
    float obs[@@PREFIX@@_OBS_DIM] = {0.0f};
    float action[@@PREFIX@@_ACTION_DIM];
    int i;
    int code = @@prefix@@_policy(obs, action);

    if (code != @@PREFIX@@_OK) {
        fprintf(stderr, "@@prefix@@_policy returned error code %d\n", code);
        return 1;
    }
    for (i = 0; i < @@PREFIX@@_ACTION_DIM; ++i) {
        printf("%s %.9g\n", action_names[i], (double)action[i]);
    }
    return 0;
}
