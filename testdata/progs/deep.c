/* Deep recursion for the pipeline's deep-stack case: main calls down 400
 * frames and back, a few times, with a little libc (strlen through the PLT)
 * at the bottom. Repeated with mt-synth --repeat --loop, a long run that
 * is 400 calls deep over and over and returns every time
 * (bench/pipeline's deep case, large.bats). "deep REPS SPIN": REPS
 * descents, each spinning SPIN loops at the bottom (a sampler then finds
 * it 400 deep: samples.bats's long call chains). */
// cflags: -fno-optimize-sibling-calls
#include <stdlib.h>
#include <string.h>

#define DEPTH 400

static volatile const char *word = "deep";
static unsigned long spin;

__attribute__((noinline)) static unsigned long down(unsigned n)
{
	if (n == 0) {
		for (volatile unsigned long k = 0; k < spin; k++)
			;
		return strlen((const char *)word);
	}
	return down(n - 1) + n % 3;
}

int main(int argc, char **argv)
{
	unsigned long sum = 0;
	int reps = argc > 1 ? atoi(argv[1]) : 3;
	spin = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	for (int i = 0; i < reps; i++)
		sum += down(DEPTH - 2); /* with main and the bottom's strlen: DEPTH frames */
	return (int)(sum & 1);
}
