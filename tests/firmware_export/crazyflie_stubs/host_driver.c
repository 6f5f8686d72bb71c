/*
 * Host test driver for the Crazyflie controller template (robo_rl tests only): compiles the generated
 * robo_rl_controller.c against the stand-in headers and firmware functions (firmware_stubs.c), and exposes one
 * call that builds the firmware structs from plain arrays, runs controllerOutOfTree once and reports what it
 * commanded.
 */
#include <string.h>

#include "robo_rl_controller.c"

#include "firmware_stubs.c"

int cf_test_pid_calls(void) { return stub_pid_calls; }

/* The generated map's motor command (robo_rl_crazyflie_map.h) of rotor i for one action. */
float cf_test_motor_command(int i, float action) { return robo_rl_cf_motor_command(i, action); }

/* The controller's position error integral (m*s, x y z) as of its last policy step. */
void cf_test_position_error_integral(float *out)
{
    int i;

    for (i = 0; i < 3; ++i) {
        out[i] = position_error_integral[i];
    }
}

/* state: position[3], quaternion x y z w [4], velocity[3], gyro deg/s [3] = 13 floats.
 * reference: setpoint position[3], velocity[3] = 6 floats.
 * Writes the 4 normalized forces (zeros unless controlModeForce) and the last observation the policy saw;
 * returns the control mode, or -1 when the PID's output was passed on (controlModeLegacy). */
int cf_test_step(const float *state_values, const float *reference, uint32_t setpoint_timestamp, int position_mode,
                 uint32_t step, float *forces, float *last_observation)
{
    control_t control;
    setpoint_t setpoint;
    sensorData_t sensors;
    state_t state;
    int i;

    memset(&control, 0, sizeof control);
    memset(&setpoint, 0, sizeof setpoint);
    memset(&sensors, 0, sizeof sensors);
    memset(&state, 0, sizeof state);
    state.position.x = state_values[0];
    state.position.y = state_values[1];
    state.position.z = state_values[2];
    state.attitudeQuaternion.x = state_values[3];
    state.attitudeQuaternion.y = state_values[4];
    state.attitudeQuaternion.z = state_values[5];
    state.attitudeQuaternion.w = state_values[6];
    state.velocity.x = state_values[7];
    state.velocity.y = state_values[8];
    state.velocity.z = state_values[9];
    sensors.gyro.x = state_values[10];
    sensors.gyro.y = state_values[11];
    sensors.gyro.z = state_values[12];
    setpoint.timestamp = setpoint_timestamp;
    setpoint.position.x = reference[0];
    setpoint.position.y = reference[1];
    setpoint.position.z = reference[2];
    setpoint.velocity.x = reference[3];
    setpoint.velocity.y = reference[4];
    setpoint.velocity.z = reference[5];
    if (position_mode) {
        setpoint.mode.x = modeAbs;
        setpoint.mode.y = modeAbs;
        setpoint.mode.z = modeAbs;
    }
    controllerOutOfTree(&control, &setpoint, &sensors, &state, step);
    for (i = 0; i < (int)(sizeof observation / sizeof observation[0]); ++i) {
        last_observation[i] = observation[i];
    }
    for (i = 0; i < 4; ++i) {
        forces[i] = control.controlMode == controlModeForce ? control.normalizedForces[i] : 0.0f;
    }
    if (control.controlMode == controlModeLegacy) {
        return -1;
    }
    return (int)control.controlMode;
}
