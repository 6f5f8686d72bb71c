/* Test firmware for the QEMU `mps2-an386` board: runs the exported policy on stored inputs and prints the
 * results over semihosting, then times the policy with the board's CMSDK APB timer 0.
 *
 * Generated next to this file by firmware_export/qemu.py:
 *   qemu_policy.h: includes the policy header and defines QEMU_POLICY (the entry function), QEMU_OBS_DIM,
 *                  QEMU_ACTION_DIM and QEMU_STATE_SIZE; for a policy with memory (QEMU_STATE_SIZE > 0)
 *                  QEMU_POLICY_STEP and QEMU_POLICY_RESET instead of QEMU_POLICY;
 *   qemu_inputs.h: QEMU_NUM_INPUTS observations as float bit patterns, QEMU_TIMED_INFERENCES,
 *                  QEMU_LOOP_SHORT and QEMU_LOOP_LONG (iterations of the known calibration loop); with memory
 *                  also qemu_resets[QEMU_NUM_INPUTS] (1: the state is reset before that input's step).
 *
 * With memory, the stored inputs are one stream of steps: the state is reset where qemu_resets says and carried
 * from each step's h_out otherwise (a step that returns an error keeps the state); the timed loop runs its steps
 * from a reset state, carrying it in place (h_in and h_out the same array), as a controller does.
 *
 * Output, one line each (all numbers hexadecimal, floats as their IEEE-754 bit patterns, so that nothing is
 * rounded on the way to the host):
 *   ROBO_RL_QEMU BEGIN <obs_dim> <action_dim> <num_inputs>
 *   ROBO_RL_QEMU OUT <index> <return code> <action bits> ... [<h_out bits> ... with memory]
 *   ROBO_RL_QEMU TICKS <name> <repetitions> <timer ticks>     (name: overhead, loop_short, loop_long, policy)
 *   ROBO_RL_QEMU END
 */
#include <stdint.h>

#include "qemu_policy.h"
#include "qemu_inputs.h" /* after qemu_policy.h: sized by QEMU_OBS_DIM */
#include "semihosting.h"

/* CMSDK APB timer 0 of the MPS2 board: a 32-bit down-counter clocked by the 25 MHz system clock. */
#define TIMER0_CTRL (*(volatile uint32_t *)0x40000000u)
#define TIMER0_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER0_RELOAD (*(volatile uint32_t *)0x40000008u)
#define TIMER_ENABLE 1u

#define TAG "ROBO_RL_QEMU "
#define HEX_DIGITS 8
#define LINE_CAPACITY (64 + (HEX_DIGITS + 1) * (QEMU_ACTION_DIM + QEMU_STATE_SIZE))
#define UNWRITTEN_MARKER 0x7FC0DEADu /* a NaN: shows what the policy left unwritten */

typedef union {
    uint32_t bits[QEMU_ACTION_DIM];
    float values[QEMU_ACTION_DIM];
} action_t;

#if QEMU_STATE_SIZE > 0
typedef union {
    uint32_t bits[QEMU_STATE_SIZE];
    float values[QEMU_STATE_SIZE];
} state_t;

static float carried_state[QEMU_STATE_SIZE];
#endif

static char line[LINE_CAPACITY];
static const float *timed_inputs[QEMU_TIMED_INFERENCES];

static char *append_text(char *cursor, const char *text)
{
    while (*text != '\0') {
        *cursor++ = *text++;
    }
    return cursor;
}

static char *append_hex(char *cursor, uint32_t value)
{
    static const char digits[] = "0123456789abcdef";
    *cursor++ = ' ';
    for (int shift = 4 * (HEX_DIGITS - 1); shift >= 0; shift -= 4) {
        *cursor++ = digits[(value >> shift) & 0xFu];
    }
    return cursor;
}

static void finish_line(char *cursor)
{
    *cursor++ = '\n';
    *cursor = '\0';
    semihosting_write(line);
}

static void timer_start(void)
{
    TIMER0_CTRL = 0u;
    TIMER0_RELOAD = 0xFFFFFFFFu;
    TIMER0_VALUE = 0xFFFFFFFFu;
    TIMER0_CTRL = TIMER_ENABLE;
}

/* Ticks since timer_start (the counter runs down from 0xFFFFFFFF). */
static uint32_t timer_ticks(void)
{
    return 0xFFFFFFFFu - TIMER0_VALUE;
}

/* Exactly 2 * iterations instructions in the loop body (`subs` + `bne`), plus the call and return. */
static void __attribute__((noinline)) known_loop(uint32_t iterations)
{
    __asm__ volatile("1:\n\tsubs %0, %0, #1\n\tbne 1b" : "+r"(iterations) : : "cc");
}

static void report_ticks(const char *name, uint32_t repetitions, uint32_t ticks)
{
    char *cursor = append_text(line, TAG "TICKS ");
    cursor = append_text(cursor, name);
    cursor = append_hex(cursor, repetitions);
    finish_line(append_hex(cursor, ticks));
}

static void time_known_loop(const char *name, uint32_t iterations)
{
    uint32_t start = timer_ticks();
    known_loop(iterations);
    report_ticks(name, iterations, timer_ticks() - start);
}

#if QEMU_STATE_SIZE > 0
static state_t next_state;

/* One step of the stream: the state reset where the inputs say, the step into next_state, which is carried on
 * success (an error leaves the state as it was). */
static int run_step(uint32_t index, action_t *action)
{
    for (uint32_t k = 0u; k < QEMU_STATE_SIZE; ++k) {
        next_state.bits[k] = UNWRITTEN_MARKER;
    }
    if (qemu_resets[index] != 0u) {
        QEMU_POLICY_RESET(carried_state);
    }
    int code = QEMU_POLICY_STEP(qemu_inputs[index].values, carried_state, action->values, next_state.values);
    for (uint32_t k = 0u; code == 0 && k < QEMU_STATE_SIZE; ++k) {
        carried_state[k] = next_state.values[k];
    }
    return code;
}

static char *append_state(char *cursor)
{
    for (uint32_t k = 0u; k < QEMU_STATE_SIZE; ++k) {
        cursor = append_hex(cursor, next_state.bits[k]);
    }
    return cursor;
}
#else
static int run_step(uint32_t index, action_t *action)
{
    return QEMU_POLICY(qemu_inputs[index].values, action->values);
}

static char *append_state(char *cursor)
{
    return cursor;
}
#endif

/* Runs every stored input once and prints the action bits (and the state's, with memory); returns how many
 * inputs the policy accepted and fills timed_inputs with those, cycled, for the timing loop. */
static uint32_t run_stored_inputs(void)
{
    uint32_t accepted = 0u;
    for (uint32_t index = 0u; index < QEMU_NUM_INPUTS; ++index) {
        action_t action;
        for (uint32_t k = 0u; k < QEMU_ACTION_DIM; ++k) {
            action.bits[k] = UNWRITTEN_MARKER;
        }
        int code = run_step(index, &action);
        char *cursor = append_text(line, TAG "OUT");
        cursor = append_hex(append_hex(cursor, index), (uint32_t)code);
        for (uint32_t k = 0u; k < QEMU_ACTION_DIM; ++k) {
            cursor = append_hex(cursor, action.bits[k]);
        }
        cursor = append_state(cursor);
        finish_line(cursor);
        if (code == 0 && accepted < QEMU_TIMED_INFERENCES) {
            timed_inputs[accepted++] = qemu_inputs[index].values;
        }
    }
    for (uint32_t k = accepted; accepted > 0u && k < QEMU_TIMED_INFERENCES; ++k) {
        timed_inputs[k] = timed_inputs[k % accepted];
    }
    return accepted;
}

static void time_policy(uint32_t accepted)
{
    action_t action;
    uint32_t repetitions = accepted > 0u ? QEMU_TIMED_INFERENCES : 0u;
#if QEMU_STATE_SIZE > 0
    QEMU_POLICY_RESET(carried_state);
#endif
    uint32_t start = timer_ticks();
    for (uint32_t k = 0u; k < repetitions; ++k) {
#if QEMU_STATE_SIZE > 0
        (void)QEMU_POLICY_STEP(timed_inputs[k], carried_state, action.values, carried_state);
#else
        (void)QEMU_POLICY(timed_inputs[k], action.values);
#endif
    }
    report_ticks("policy", repetitions, timer_ticks() - start);
}

int main(void)
{
    char *cursor = append_text(line, TAG "BEGIN");
    cursor = append_hex(append_hex(cursor, QEMU_OBS_DIM), QEMU_ACTION_DIM);
    finish_line(append_hex(cursor, QEMU_NUM_INPUTS));
    uint32_t accepted = run_stored_inputs();

    timer_start();
    uint32_t start = timer_ticks();
    report_ticks("overhead", 1u, timer_ticks() - start);
    time_known_loop("loop_short", QEMU_LOOP_SHORT);
    time_known_loop("loop_long", QEMU_LOOP_LONG);
    time_policy(accepted);
    finish_line(append_text(line, TAG "END"));
    return 0;
}
