/* Stand-in for the Crazyflie firmware's controller.h: the out-of-tree controller entry points only. */
#ifndef CONTROLLER_H_STUB
#define CONTROLLER_H_STUB

#include "stabilizer_types.h"

void controllerOutOfTreeInit(void);
bool controllerOutOfTreeTest(void);
void controllerOutOfTree(control_t *control, const setpoint_t *setpoint, const sensorData_t *sensors,
                         const state_t *state, const stabilizerStep_t stabilizerStep);

#endif
