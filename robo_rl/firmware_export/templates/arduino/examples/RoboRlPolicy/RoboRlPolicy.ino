/*
 * RoboRlPolicy example: runs the policy @@POLICY_NAME@@ (task @@TASK@@) once per control period on an all-zero
 * observation and prints the actions and the inference time. Replace read_observation() with your sensors:
 * the order, names and units of the observation are listed in @@POLICY_HEADER@@. A policy with memory (the header
 * defines @@PREFIX@@_STATE_SIZE) carries its state from step to step and resets it after a rejected observation
 * (your fallback flies then); reset it too whenever something else takes over from the policy.
 */
#include <RoboRlPolicy.h>

static const unsigned long CONTROL_PERIOD_US = @@PERIOD_US@@UL;

static float observation[@@PREFIX@@_OBS_DIM];
static float action[@@PREFIX@@_ACTION_CHUNK * @@PREFIX@@_ACTION_DIM]; /* CHUNK steps of DIM actions */
static unsigned long next_step_us;
#ifdef @@PREFIX@@_STATE_SIZE
static float state[@@PREFIX@@_STATE_SIZE]; /* the policy's memory: h_in before a step, h_out after it */
#endif

static void read_observation(float *obs)
{
    for (int i = 0; i < @@PREFIX@@_OBS_DIM; ++i) {
        obs[i] = 0.0f;
    }
}

void setup()
{
    Serial.begin(115200);
#ifdef @@PREFIX@@_STATE_SIZE
    @@prefix@@_policy_reset(state);
#endif
    next_step_us = micros();
}

void loop()
{
    if ((long)(micros() - next_step_us) < 0) {
        return;
    }
    next_step_us += CONTROL_PERIOD_US;
    read_observation(observation);
    const unsigned long start_us = micros();
#ifdef @@PREFIX@@_STATE_SIZE
    const int code = @@prefix@@_policy_step(observation, state, action, state);
#else
    const int code = @@prefix@@_policy(observation, action);
#endif
    const unsigned long elapsed_us = micros() - start_us;
    if (code != @@PREFIX@@_OK) {
        Serial.println("observation rejected (non-finite value): keep the last safe command");
#ifdef @@PREFIX@@_STATE_SIZE
        @@prefix@@_policy_reset(state);
#endif
        return;
    }
    for (int i = 0; i < @@PREFIX@@_ACTION_CHUNK * @@PREFIX@@_ACTION_DIM; ++i) {
        Serial.print(action[i], 6);
        Serial.print(i + 1 < @@PREFIX@@_ACTION_CHUNK * @@PREFIX@@_ACTION_DIM ? " " : "\n");
    }
    Serial.print("inference us: ");
    Serial.println(elapsed_us);
}
