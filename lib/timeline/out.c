/* out: the timeline's output buffer, plain or gzipped; a failed write is
 * remembered (with its errno) and reported when the trace is finished. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <errno.h>
#include <string.h>

#include "base/outfile.h"

void mt_tl_flush(struct mt_pftrace *pf)
{
	size_t n = pf->nobuf;
	pf->nobuf = 0;
	if (pf->write_failed || !n)
		return;
	if (pf->gz ? gzwrite(pf->gz, pf->obuf, (unsigned)n) != (int)n : fwrite(pf->obuf, 1, n, pf->out) != n) {
		pf->write_failed = true;
		pf->write_errno = errno ? errno : EIO;
		return;
	}
	if (!pf->gz) { /* gzip's bytes are not these */
		pf->written += n;
		mt_outfile_writeback(fileno(pf->out), &pf->writeback_from, pf->written);
	}
}

void mt_tl_out(struct mt_pftrace *pf, const void *b, size_t n)
{
	pf->st.bytes += n;
	while (n) {
		if (pf->nobuf == sizeof pf->obuf)
			mt_tl_flush(pf);
		size_t k = sizeof pf->obuf - pf->nobuf;
		if (k > n)
			k = n;
		memcpy(pf->obuf + pf->nobuf, b, k);
		pf->nobuf += k;
		b = (const uint8_t *)b + k;
		n -= k;
	}
}
