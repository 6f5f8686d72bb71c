/*
 * Stand-ins for the firmware functions the Crazyflie controller template calls (robo_rl tests only), written for
 * the tests: the PID controller and the power distribution. Deterministic, and shaped like the stock ones where
 * the hand-over depends on them; neither is a working flight controller. Included (after robo_rl_controller.c)
 * by host_driver.c and handover_scenarios.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller_pid.h"
#include "power_distribution.h"
#include "stabilizer_types.h"

#define STUB_PID_HOVER_THRUST 38000.0f
#define STUB_PID_MAX_THRUST 60000.0f
#define STUB_PID_MAX_ANGLE 6000.0f

static int stub_pid_calls;

void controllerPidInit(void)
{
    stub_pid_calls = 0;
}

bool controllerPidTest(void)
{
    return true;
}

static float stub_clamp(float value, float low, float high)
{
    return fminf(fmaxf(value, low), high); /* NaN -> low */
}

/* Legacy control mode like the stock PID. Without a z setpoint the thrust is the setpoint's (the commander's null
 * setpoint: 0, motors off, attitude commands zeroed); with one, a height law. Roll, pitch and yaw are written at
 * ATTITUDE_RATE only, as the stock PID does, so the caller must keep control_t between calls. */
void controllerPid(control_t *control, const setpoint_t *setpoint, const sensorData_t *sensors, const state_t *state,
                   const stabilizerStep_t stabilizerStep)
{
    float thrust;

    ++stub_pid_calls;
    control->controlMode = controlModeLegacy;
    if (setpoint->mode.z == modeDisable) {
        thrust = setpoint->thrust;
    } else {
        thrust = STUB_PID_HOVER_THRUST + 20000.0f * (setpoint->position.z - state->position.z) -
                 6000.0f * state->velocity.z;
    }
    thrust = stub_clamp(thrust, 0.0f, STUB_PID_MAX_THRUST);
    if (RATE_DO_EXECUTE(ATTITUDE_RATE, stabilizerStep)) {
        const bool horizontal = setpoint->mode.x == modeAbs && setpoint->mode.y == modeAbs;
        const float error_x = horizontal ? state->position.x - setpoint->position.x : 0.0f;
        const float error_y = horizontal ? state->position.y - setpoint->position.y : 0.0f;
        control->roll = (int16_t)stub_clamp(4000.0f * error_y, -STUB_PID_MAX_ANGLE, STUB_PID_MAX_ANGLE);
        control->pitch = (int16_t)stub_clamp(-4000.0f * error_x, -STUB_PID_MAX_ANGLE, STUB_PID_MAX_ANGLE);
        control->yaw = (int16_t)stub_clamp(-20.0f * sensors->gyro.z, -STUB_PID_MAX_ANGLE, STUB_PID_MAX_ANGLE);
    }
    control->thrust = thrust;
    if (thrust == 0.0f) {
        control->roll = 0;
        control->pitch = 0;
        control->yaw = 0;
    }
}

/* Quadrotor X mixing of the legacy output (M1 front-right, M2 back-right, M3 back-left, M4 front-left) and the
 * normalized forces of controlModeForce, in 0 ... UINT16_MAX units. */
void powerDistribution(const control_t *control, motors_thrust_uncapped_t *motorThrustUncapped)
{
    int i;

    if (control->controlMode == controlModeForce) {
        for (i = 0; i < STABILIZER_NR_OF_MOTORS; ++i) {
            motorThrustUncapped->list[i] = (int32_t)(stub_clamp(control->normalizedForces[i], 0.0f, 1.0f) * 65535.0f);
        }
    } else if (control->controlMode == controlModeLegacy) {
        const int32_t thrust = (int32_t)control->thrust;
        const int32_t roll = control->roll / 2;
        const int32_t pitch = control->pitch / 2;
        const int32_t yaw = control->yaw;
        motorThrustUncapped->motors.m1 = thrust - roll + pitch + yaw;
        motorThrustUncapped->motors.m2 = thrust - roll - pitch - yaw;
        motorThrustUncapped->motors.m3 = thrust + roll - pitch + yaw;
        motorThrustUncapped->motors.m4 = thrust + roll + pitch - yaw;
    } else {
        for (i = 0; i < STABILIZER_NR_OF_MOTORS; ++i) {
            motorThrustUncapped->list[i] = 0;
        }
    }
}
