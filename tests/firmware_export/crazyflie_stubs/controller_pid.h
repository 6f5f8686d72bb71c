/* Stand-in for the Crazyflie firmware's controller_pid.h: the PID controller the template falls back to. */
#ifndef CONTROLLER_PID_H_STUB
#define CONTROLLER_PID_H_STUB

#include "stabilizer_types.h"

void controllerPidInit(void);
bool controllerPidTest(void);
void controllerPid(control_t *control, const setpoint_t *setpoint, const sensorData_t *sensors, const state_t *state,
                   const stabilizerStep_t stabilizerStep);

#endif
