/* Deep recursion for the pipeline's deep-stack case: main calls down 400
 * frames and back, a few times, with a little libc (strlen through the PLT)
 * at the bottom. Repeated with mt-synth --repeat --loop, a long run that
 * is 400 calls deep over and over and returns every time
 * (bench/pipeline's deep case, large.bats). */
// cflags: -fno-optimize-sibling-calls
#include <string.h>

#define DEPTH 400

static volatile const char *word = "deep";

__attribute__((noinline)) static unsigned long down(unsigned n)
{
	if (n == 0)
		return strlen((const char *)word);
	return down(n - 1) + n % 3;
}

int main(void)
{
	unsigned long sum = 0;
	for (int i = 0; i < 3; i++)
		sum += down(DEPTH - 2); /* with main and the bottom's strlen: DEPTH frames */
	return (int)(sum & 1);
}
