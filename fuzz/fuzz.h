/* fuzz: what every harness shares. Each fuzz_*.c defines libFuzzer's entry
 * point over one input parser; built with clang -fsanitize=fuzzer for
 * `make fuzz`, or with replay.c (any compiler) to run saved inputs. */
#ifndef MT_FUZZ_H
#define MT_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A sink for output nobody reads (opened once). */
FILE *fuzz_devnull(void);
/* The input as a file (a memfd): its /proc/self/fd path, valid until the
 * next call; NULL if it cannot be made. */
const char *fuzz_input_file(const uint8_t *data, size_t size);

#endif
