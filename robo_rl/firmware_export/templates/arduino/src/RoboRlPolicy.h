/*
 * Arduino entry header of the RoboRlPolicy library (robo_rl policy @@POLICY_NAME@@, task @@TASK@@).
 * The policy is compiled as C; this header gives sketches (C++) the C linkage for it.
 */
#ifndef ROBO_RL_POLICY_ARDUINO_H
#define ROBO_RL_POLICY_ARDUINO_H

#ifdef __cplusplus
extern "C" {
#endif

#include "@@POLICY_HEADER@@"

#ifdef __cplusplus
}
#endif

#endif
