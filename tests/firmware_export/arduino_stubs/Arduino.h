/*
 * Stand-in for the Arduino core's Arduino.h (robo_rl tests only): just what the RoboRlPolicy example sketch uses,
 * so that the sketch can be compile-checked as C++ with arm-none-eabi-g++. It is not the Arduino core.
 */
#ifndef ARDUINO_H_STUB
#define ARDUINO_H_STUB

unsigned long micros(void);

class HardwareSerialStub {
public:
    void begin(unsigned long baud);
    void print(const char *text);
    void print(float value, int digits);
    void println(const char *text);
    void println(unsigned long value);
};

extern HardwareSerialStub Serial;

#endif
