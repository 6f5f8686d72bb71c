/* Stand-in for the Crazyflie firmware's power_distribution.h: the call the controller template uses to turn the
 * PID's output into motor commands during the hand-over ramp. */
#ifndef POWER_DISTRIBUTION_H_STUB
#define POWER_DISTRIBUTION_H_STUB

#include "stabilizer_types.h"

void powerDistribution(const control_t *control, motors_thrust_uncapped_t *motorThrustUncapped);

#endif
