/*
 * Stand-in for the Crazyflie firmware's stabilizer_types.h (src/modules/interface), written for robo_rl's tests:
 * only the types, fields and macros the robo_rl controller template uses, with the same names, types and units
 * as the firmware (2024+ layout with control modes and stabilizerStep_t). It is not the firmware's header; the
 * template has not been built against the real firmware here.
 */
#ifndef STABILIZER_TYPES_H_STUB
#define STABILIZER_TYPES_H_STUB

#include <stdbool.h>
#include <stdint.h>

typedef union {
    struct {
        float x;
        float y;
        float z;
    };
    float axis[3];
} Axis3f;

typedef struct attitude_s {
    uint32_t timestamp;
    float roll;
    float pitch;
    float yaw;
} attitude_t;

struct vec3_s {
    uint32_t timestamp;
    float x;
    float y;
    float z;
};

typedef struct vec3_s point_t;
typedef struct vec3_s velocity_t;
typedef struct vec3_s acc_t;

typedef struct quaternion_s {
    uint32_t timestamp;
    union {
        struct {
            float q0;
            float q1;
            float q2;
            float q3;
        };
        struct {
            float x;
            float y;
            float z;
            float w;
        };
    };
} quaternion_t;

typedef struct sensorData_s {
    Axis3f acc;  /* Gs */
    Axis3f gyro; /* deg/s */
    Axis3f mag;  /* gauss */
    uint64_t interruptTimestamp;
} sensorData_t;

typedef struct state_s {
    attitude_t attitude; /* deg, legacy frame with inverted pitch */
    quaternion_t attitudeQuaternion;
    point_t position;    /* m */
    velocity_t velocity; /* m/s */
    acc_t acc;           /* Gs */
} state_t;

#define STABILIZER_NR_OF_MOTORS 4

typedef enum control_mode_e {
    controlModeLegacy = 0,
    controlModeForceTorque = 1,
    controlModeForce = 2,
} control_mode_t;

typedef struct control_s {
    union {
        struct {
            int16_t roll;
            int16_t pitch;
            int16_t yaw;
            float thrust;
        };
        struct {
            float thrustSi;
            union {
                float torque[3];
                struct {
                    float torqueX;
                    float torqueY;
                    float torqueZ;
                };
            };
        };
        float normalizedForces[STABILIZER_NR_OF_MOTORS]; /* 0.0 ... 1.0 */
    };
    control_mode_t controlMode;
} control_t;

/* Per-motor thrust from the power distribution, 0 ... UINT16_MAX (PWM ratio) before capping. */
typedef union {
    int32_t list[STABILIZER_NR_OF_MOTORS];
    struct {
        int32_t m1;
        int32_t m2;
        int32_t m3;
        int32_t m4;
    } motors;
} motors_thrust_uncapped_t;

typedef enum mode_e {
    modeDisable = 0,
    modeAbs,
    modeVelocity
} stab_mode_t;

typedef struct setpoint_s {
    uint32_t timestamp; /* ticks (ms) */
    attitude_t attitude;
    attitude_t attitudeRate;
    quaternion_t attitudeQuaternion;
    float thrust;
    point_t position;    /* m */
    velocity_t velocity; /* m/s */
    acc_t acceleration;  /* m/s^2 */
    bool velocity_body;
    struct {
        stab_mode_t x;
        stab_mode_t y;
        stab_mode_t z;
        stab_mode_t roll;
        stab_mode_t pitch;
        stab_mode_t yaw;
        stab_mode_t quat;
    } mode;
} setpoint_t;

typedef uint32_t stabilizerStep_t;

#define RATE_1000_HZ 1000
#define RATE_500_HZ 500
#define RATE_250_HZ 250
#define RATE_100_HZ 100
#define RATE_50_HZ 50
#define RATE_25_HZ 25
#define RATE_MAIN_LOOP RATE_1000_HZ
#define ATTITUDE_RATE RATE_500_HZ
#define POSITION_RATE RATE_100_HZ
#define RATE_DO_EXECUTE(RATE_HZ, TICK) ((TICK % (RATE_MAIN_LOOP / RATE_HZ)) == 0)

#endif
