/*
 * Scripted flights through the Crazyflie controller's hand-over state machine (robo_rl tests only). The generated
 * robo_rl_controller.c and the real generated policy run unchanged, with the stand-in PID and power distribution
 * of firmware_stubs.c; the state estimate and the commander's setpoints are scripted here, tick by tick (1 kHz).
 * The same file runs on the host (handover_host.c) and on an emulated Cortex-M4 in QEMU (handover_qemu.c); both
 * print the trace below, which tests/firmware_export/test_crazyflie_handover.py checks and compares.
 *
 * Trace lines (one space between fields; floats as IEEE-754 bit patterns in 8 hex digits, integers in decimal):
 *   S <scenario> <name>                 a scenario begins (controllerOutOfTreeInit)
 *   T <scenario> <tick> <state> <fault> <mode> <policy steps> <blend> <out 4> <pid 4> <policy 4>
 *   P <scenario> <tick> <code> <inputs 19> <observation OBS_DIM> <action ACTION_DIM> [<memory STATE_SIZE>]
 *   M <scenario> <tick> <memory STATE_SIZE>
 *   E                                   end of the trace
 * One T line per tick: the state machine (robo_rl_cf_handover_state, robo_rl_cf_fault), the output's control mode,
 * the policy evaluations so far, the blend weight, then motor commands as PWM ratios (0..1) of M1..M4: what the
 * controller output (its normalizedForces in controlModeForce, else its legacy output through the power
 * distribution), what the PID commands (through the power distribution), and the policy's held command. A P
 * line follows when the policy ran on that tick: its return code, the scripted inputs (position[3], quaternion
 * x y z w, velocity[3], gyro[3] in deg/s, setpoint position[3], setpoint velocity[3]), the clipped observation it
 * saw and its action (in the ONNX file's order); for a policy with memory (ROBO_RL_CF_MEMORY_SIZE > 0) also the
 * controller's memory after the step (the policy's h_out). An M line (policy with memory only) shows the
 * controller's memory after a tick whenever it differs from the last one shown (policy steps, resets, and the
 * stale state that start_stream plants before each take-off, which the hand-over must not pass to the policy).
 */
#include <stdint.h>
#include <string.h>

#include "robo_rl_controller.c"

#include "firmware_stubs.c"

typedef void (*trace_write_t)(const char *text);

#define SCENARIO_LINE_CAPACITY (1024 + 9 * ROBO_RL_CF_MEMORY_SIZE)
#define SETPOINT_PERIOD_TICKS 10u /* the commander streams a setpoint every 10 ms */

/* sin and cos of 20 and 35 degrees: quaternions tilted by 40 and 70 degrees (literals, the same on every
 * machine). */
#define SIN_20 0.34202014f
#define COS_20 0.93969262f
#define SIN_35 0.57357644f
#define COS_35 0.81915204f

typedef struct {
    float position[3];   /* m */
    float quaternion[4]; /* x y z w */
    float velocity[3];   /* m/s */
    float gyro[3];       /* deg/s */
    float target[3];     /* setpoint position, m */
    float target_velocity[3];
    bool position_mode; /* x, y, z in modeAbs; otherwise all modes disabled and thrust 0 (the null setpoint) */
    bool streaming;     /* the commander sends setpoints: the timestamp changes every SETPOINT_PERIOD_TICKS */
    uint32_t stream_ticks;
    uint32_t timestamp;
} world_t;

static trace_write_t trace_write;
static char line[SCENARIO_LINE_CAPACITY];
static char *cursor;
static uint32_t scenario_number;
static uint32_t scenario_tick;
static control_t stabilizer_control; /* kept between ticks, like the stabilizer's */
#if ROBO_RL_CF_MEMORY_SIZE > 0
static float shown_memory[ROBO_RL_CF_MEMORY_SIZE]; /* the memory as the last M line showed it */
#endif

static void put_text(const char *text)
{
    while (*text != '\0' && cursor < line + SCENARIO_LINE_CAPACITY - 2) {
        *cursor++ = *text++;
    }
}

static void put_uint(uint32_t value)
{
    char digits[10];
    int count = 0;

    do {
        digits[count++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    *cursor++ = ' ';
    while (count > 0) {
        *cursor++ = digits[--count];
    }
}

static void put_int(int32_t value)
{
    if (value < 0) {
        put_text(" -");
        put_uint((uint32_t)(-value));
        return;
    }
    put_uint((uint32_t)value);
}

static void put_float(float value)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t bits;
    int shift;

    memcpy(&bits, &value, sizeof bits);
    *cursor++ = ' ';
    for (shift = 28; shift >= 0; shift -= 4) {
        *cursor++ = hex[(bits >> shift) & 0xFu];
    }
}

static void put_floats(const float *values, int count)
{
    int i;

    for (i = 0; i < count; ++i) {
        put_float(values[i]);
    }
}

static void begin_line(const char *tag)
{
    cursor = line;
    put_text(tag);
}

static void end_line(void)
{
    *cursor++ = '\n';
    *cursor = '\0';
    trace_write(line);
}

static void begin_scenario(const char *name, world_t *world)
{
    controllerOutOfTreeInit();
#if ROBO_RL_CF_MEMORY_SIZE > 0
    memcpy(shown_memory, policy_memory, sizeof shown_memory); /* M lines show changes from the reset state */
#endif
    memset(&stabilizer_control, 0, sizeof stabilizer_control);
    memset(world, 0, sizeof *world);
    world->quaternion[3] = 1.0f;
    ++scenario_number;
    scenario_tick = 0;
    begin_line("S");
    put_uint(scenario_number);
    put_text(" ");
    put_text(name);
    end_line();
}

static float mm(int32_t millimetres)
{
    return (float)millimetres / 1000.0f;
}

static void start_stream(world_t *world, int32_t x_mm, int32_t y_mm, int32_t z_mm)
{
#if ROBO_RL_CF_MEMORY_SIZE > 0
    int i;

    for (i = 0; i < ROBO_RL_CF_MEMORY_SIZE; ++i) { /* a stale state, as if left from an earlier flight */
        policy_memory[i] = 0.5f;
    }
#endif
    world->target[0] = mm(x_mm);
    world->target[1] = mm(y_mm);
    world->target[2] = mm(z_mm);
    world->position_mode = true;
    world->streaming = true;
    world->stream_ticks = 0;
}

static void level(world_t *world)
{
    world->quaternion[0] = 0.0f;
    world->quaternion[1] = 0.0f;
    world->quaternion[2] = 0.0f;
    world->quaternion[3] = 1.0f;
}

/* One stabilizer tick: the scripted inputs into the firmware structs, controllerOutOfTree, the trace. */
static void tick(world_t *world)
{
    const uint32_t step = scenario_tick + 1u;
    const uint32_t steps_before = policy_steps;
    setpoint_t setpoint;
    sensorData_t sensors;
    state_t state;
    float inputs[19];
    float out[ROBO_RL_CF_MOTORS];
    float pid[ROBO_RL_CF_MOTORS];
    int i;

    if (world->streaming) {
        if (world->stream_ticks % SETPOINT_PERIOD_TICKS == 0u) {
            ++world->timestamp;
        }
        ++world->stream_ticks;
    }
    memset(&setpoint, 0, sizeof setpoint);
    memset(&sensors, 0, sizeof sensors);
    memset(&state, 0, sizeof state);
    setpoint.timestamp = world->timestamp;
    if (world->position_mode) {
        setpoint.mode.x = modeAbs;
        setpoint.mode.y = modeAbs;
        setpoint.mode.z = modeAbs;
        setpoint.mode.yaw = modeAbs;
        setpoint.position.x = world->target[0];
        setpoint.position.y = world->target[1];
        setpoint.position.z = world->target[2];
        setpoint.velocity.x = world->target_velocity[0];
        setpoint.velocity.y = world->target_velocity[1];
        setpoint.velocity.z = world->target_velocity[2];
    }
    state.position.x = world->position[0];
    state.position.y = world->position[1];
    state.position.z = world->position[2];
    state.attitudeQuaternion.x = world->quaternion[0];
    state.attitudeQuaternion.y = world->quaternion[1];
    state.attitudeQuaternion.z = world->quaternion[2];
    state.attitudeQuaternion.w = world->quaternion[3];
    state.velocity.x = world->velocity[0];
    state.velocity.y = world->velocity[1];
    state.velocity.z = world->velocity[2];
    sensors.gyro.x = world->gyro[0];
    sensors.gyro.y = world->gyro[1];
    sensors.gyro.z = world->gyro[2];

    controllerOutOfTree(&stabilizer_control, &setpoint, &sensors, &state, step);

    if (stabilizer_control.controlMode == controlModeForce) {
        for (i = 0; i < ROBO_RL_CF_MOTORS; ++i) {
            out[i] = stabilizer_control.normalizedForces[i];
        }
    } else {
        motor_ratios(&stabilizer_control, out);
    }
    motor_ratios(&pid_control, pid);
    begin_line("T");
    put_uint(scenario_number);
    put_uint(scenario_tick);
    put_uint(robo_rl_cf_handover_state());
    put_uint(robo_rl_cf_fault());
    put_int((int32_t)stabilizer_control.controlMode);
    put_uint(policy_steps);
    put_float(robo_rl_cf_blend());
    put_floats(out, ROBO_RL_CF_MOTORS);
    put_floats(pid, ROBO_RL_CF_MOTORS);
    put_floats(motor_command, ROBO_RL_CF_MOTORS);
    end_line();
    if (policy_steps != steps_before) {
        for (i = 0; i < 3; ++i) {
            inputs[i] = world->position[i];
            inputs[7 + i] = world->velocity[i];
            inputs[10 + i] = world->gyro[i];
            inputs[13 + i] = setpoint.mode.x == modeAbs ? world->target[i] : 0.0f;
            inputs[16 + i] = setpoint.mode.x == modeAbs ? world->target_velocity[i] : 0.0f;
        }
        for (i = 0; i < 4; ++i) {
            inputs[3 + i] = world->quaternion[i];
        }
        begin_line("P");
        put_uint(scenario_number);
        put_uint(scenario_tick);
        put_uint(policy_error);
        put_floats(inputs, 19);
        put_floats(observation, (int)(sizeof observation / sizeof observation[0]));
        put_floats(action, (int)(sizeof action / sizeof action[0]));
#if ROBO_RL_CF_MEMORY_SIZE > 0
        put_floats(policy_memory, ROBO_RL_CF_MEMORY_SIZE);
#endif
        end_line();
    }
#if ROBO_RL_CF_MEMORY_SIZE > 0
    if (memcmp(shown_memory, policy_memory, sizeof shown_memory) != 0) {
        memcpy(shown_memory, policy_memory, sizeof shown_memory);
        begin_line("M");
        put_uint(scenario_number);
        put_uint(scenario_tick);
        put_floats(policy_memory, ROBO_RL_CF_MEMORY_SIZE);
        end_line();
    }
#endif
    ++scenario_tick;
}

static void run(world_t *world, uint32_t ticks)
{
    uint32_t k;

    for (k = 0; k < ticks; ++k) {
        tick(world);
    }
}

/* Climb (or descend) at 0.4 m/s from from_mm to to_mm, one tick at a time, then stop. */
static void climb(world_t *world, int32_t from_mm, int32_t to_mm)
{
    const int32_t direction = to_mm >= from_mm ? 1 : -1;
    const int32_t ticks = (to_mm - from_mm) * direction * 5 / 2;
    int32_t k;

    world->velocity[2] = 0.4f * (float)direction;
    for (k = 0; k < ticks; ++k) {
        world->position[2] = mm(from_mm + direction * (2 * k) / 5);
        tick(world);
    }
    world->position[2] = mm(to_mm);
    world->velocity[2] = 0.0f;
}

/* Ground, take-off under the PID, hand-over through the ramp, policy, observation clip, faults and latches. */
static void scenario_flight(void)
{
    world_t world;

    begin_scenario("flight", &world);
    run(&world, 200); /* on the ground, no setpoint: motors off */
    start_stream(&world, 0, 0, 1000);
    climb(&world, 0, 1000); /* the PID takes off; the hand-over waits for |position error z| <= 0.5 m */
    world.position[0] = mm(20);
    world.position[1] = mm(-30);
    world.quaternion[0] = 0.02f;
    world.quaternion[1] = -0.01f;
    world.quaternion[3] = 0.99975f;
    world.velocity[0] = 0.05f;
    world.gyro[0] = 5.0f;
    world.gyro[1] = -3.0f;
    world.gyro[2] = 2.0f;
    run(&world, 500); /* hover under the policy */
    world.target[0] = mm(-800); /* 0.8 m position error: clipped to 0.5 m in the observation, no fault */
    run(&world, 300);
    world.target[0] = 0.0f;
    run(&world, 97);
    world.velocity[1] = NAN; /* estimator glitch: the policy rejects the observation at its next step */
    run(&world, 25);
    world.velocity[1] = 0.0f;
    run(&world, 300); /* latched: the PID flies although the state is fine again */
    world.streaming = false;
    climb(&world, 1000, 0); /* the commander stops and the drone lands: the request ends after the timeout */
    run(&world, 200);

    start_stream(&world, 0, 0, 1000); /* second take-off: the same conditions again */
    climb(&world, 0, 1000);
    run(&world, 300);
    world.target[0] = mm(-1500); /* 1.5 m position error: fault at once */
    run(&world, 50);
    world.target[0] = 0.0f;
    run(&world, 200); /* latched */
    world.position_mode = false; /* the commander switches to another mode: the request ends */
    run(&world, 50);
}

/* Each hand-over condition holds the PID in command in turn; the policy never flies on the ground. */
static void scenario_conditions(void)
{
    world_t world;

    begin_scenario("conditions", &world);
    run(&world, 200);
    /* A take-off trajectory starts just above the drone (as the high-level commander's does): the position error
     * is small, long past the minimum PID time, but the drone is still on the ground. */
    start_stream(&world, 0, 0, 100);
    run(&world, 3000);
    world.target[2] = mm(300);
    world.position[2] = mm(150);
    run(&world, 1000); /* 0.15 m: below the take-off height, the error is small */
    world.target[2] = mm(1000);
    world.position[2] = mm(600);
    world.quaternion[0] = SIN_20;
    world.quaternion[3] = COS_20;
    run(&world, 300); /* airborne, but tilted by 40 degrees */
    level(&world);
    world.position[2] = mm(300);
    run(&world, 300); /* level, 0.7 m below the setpoint: outside the clip range */
    world.position[2] = mm(600);
    run(&world, 700); /* hand-over, ramp, policy */
    world.streaming = false;
    run(&world, 700); /* the setpoint times out: fault (commander), then ground */
}

/* Time as the binding condition, then tilt, NaN position and commander faults, each after a new take-off. */
static void scenario_faults(void)
{
    world_t world;

    begin_scenario("faults", &world);
    run(&world, 100);
    start_stream(&world, 0, 0, 500);
    world.position[2] = mm(400); /* airborne and in range at once: the minimum PID time binds */
    run(&world, 1700);
    world.quaternion[1] = SIN_35;
    world.quaternion[3] = COS_35;
    run(&world, 1); /* 70 degrees of tilt */
    level(&world);
    run(&world, 100);
    world.streaming = false;
    run(&world, 600);
    world.position[2] = 0.0f;
    run(&world, 50);

    start_stream(&world, 0, 0, 500);
    world.position[2] = mm(400);
    run(&world, 1700);
    world.position[0] = NAN; /* the position estimate breaks down */
    run(&world, 1);
    world.position[0] = 0.0f;
    run(&world, 50);
    world.position_mode = false;
    run(&world, 50);
    world.position[2] = 0.0f;
    run(&world, 50);

    start_stream(&world, 0, 0, 500);
    world.position[2] = mm(400);
    run(&world, 1700);
    world.streaming = false; /* the commander stops while the policy flies */
    run(&world, 600);
}

/* Taking off from a table: the start height is where the drone stood, not z = 0. */
static void scenario_table(void)
{
    world_t world;

    begin_scenario("table", &world);
    world.position[2] = mm(500);
    run(&world, 100);
    start_stream(&world, 0, 0, 600);
    run(&world, 1500); /* 0.5 m above z = 0, but still on the table */
    world.position[2] = mm(750);
    run(&world, 600); /* 0.25 m above the table: hand-over */
    world.position_mode = false;
    run(&world, 50);
}

int handover_scenarios_run(trace_write_t write)
{
    trace_write = write;
    scenario_number = 0;
    scenario_flight();
    scenario_conditions();
    scenario_faults();
    scenario_table();
    begin_line("E");
    end_line();
    return 0;
}
