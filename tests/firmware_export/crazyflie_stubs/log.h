/*
 * Stand-in for the Crazyflie firmware's log.h: the group macros build a static table of (type, name, address)
 * like the firmware's, so the template's log variables are type-checked when it is compiled against the stubs.
 */
#ifndef LOG_H_STUB
#define LOG_H_STUB

#include <stdint.h>

#define LOG_UINT8 1
#define LOG_FLOAT 7

struct log_stub_s {
    uint8_t type;
    const char *name;
    const void *address;
};

#define LOG_GROUP_START(NAME) \
    static const struct log_stub_s log_stub_##NAME[] __attribute__((used)) = {{0, #NAME, 0},
#define LOG_ADD(TYPE, NAME, ADDRESS) {TYPE, #NAME, (const void *)(ADDRESS)},
#define LOG_GROUP_STOP(NAME) {0, "stop_" #NAME, 0}};

#endif
