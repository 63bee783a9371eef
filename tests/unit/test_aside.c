/* Unit tests of a memo's standing aside (stream/aside.h); TAP output.
 * Oracle: the contract in aside.h, counted by hand. */
#include "stream/aside.h"

#include "tap.h"

int main(void)
{
	struct mt_aside a = {0};
	ok(mt_aside_active(&a), "a new memo looks");
	for (int i = 0; i < 8; i++)
		mt_aside_count(&a, i < 3, 8, 4, 5);
	ok(a.skip == 5 && a.window == 0 && a.hits == 0, "3 hits in a window of 8, 4 wanted: it skips 5 lines");
	unsigned skipped = 0;
	while (!mt_aside_active(&a))
		skipped++;
	ok(skipped == 5, "it stands aside for those 5 lines, then looks again");
	for (int i = 0; i < 8; i++)
		mt_aside_count(&a, i < 4, 8, 4, 5);
	ok(a.skip == 0 && mt_aside_active(&a), "4 hits of 8: it keeps looking");
	for (int i = 0; i < 7; i++)
		mt_aside_count(&a, false, 8, 4, 5);
	ok(a.skip == 0 && a.window == 7, "a window not yet full decides nothing");
	return tap_done();
}
