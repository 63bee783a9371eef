#include "trace/ptpacket.h"

#include <string.h>

static const uint8_t psb_pattern[PSB_SIZE] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					      0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

bool mt_pkt_is_psb(const uint8_t *p, const uint8_t *end)
{
	return end - p >= PSB_SIZE && !memcmp(p, psb_pattern, PSB_SIZE);
}

const uint8_t *mt_pkt_find_psb(const uint8_t *p, const uint8_t *end)
{
	while (end - p >= PSB_SIZE) {
		const uint8_t *x = memchr(p, OP_EXT, (size_t)(end - p - PSB_SIZE + 1));
		if (!x)
			return NULL;
		if (mt_pkt_is_psb(x, end)) {
			while (end - x >= PSB_SIZE + 2 && x[PSB_SIZE] == 0x02 && x[PSB_SIZE + 1] == EXT_PSB)
				x += 2;
			return x;
		}
		p = x + 1;
	}
	return NULL;
}

int mt_pkt_trig_size(const uint8_t *p, const uint8_t *end, int *fup, unsigned *ipc)
{
	if (end - p < TRIG_SIZE)
		return 0;
	int n = TRIG_SIZE + (p[1] & MT_TRIG_ICNTV ? TRIG_ICNT_SIZE : 0);
	*fup = 0;
	if (end - p < n)
		return 0;
	if (!(p[1] & MT_TRIG_IP))
		return n;
	int f = p + n < end && (p[n] & 0x1f) == IP_FUP ? mt_pkt_ip_size(p + n, end, ipc) : 0;
	if (!f || !*ipc)
		return 0;
	*fup = n;
	return n + f;
}

int mt_pkt_note_size(const uint8_t *p, const uint8_t *end, bool *fup)
{
	if (end - p < 2)
		return 0;
	uint8_t b1 = p[1];
	int n = 0;
	*fup = false;
	if ((b1 & EXT_PTW_MASK) == EXT_PTW) {
		unsigned pb = (b1 >> 5) & 3;
		n = pb == 0 ? 6 : pb == 1 ? 10 : 0; /* other payload sizes are reserved */
		*fup = b1 & EXT_IP_BIT;
	} else if ((b1 & ~EXT_IP_BIT) == EXT_EXSTOP) {
		n = EXSTOP_SIZE;
		*fup = b1 & EXT_IP_BIT;
	} else if (b1 == EXT_MWAIT) {
		n = MWAIT_SIZE;
		*fup = true;
	} else if (b1 == EXT_PWRE) {
		n = PWRE_SIZE;
	} else if (b1 == EXT_PWRX) {
		n = PWRX_SIZE;
	} else if (b1 == EXT_CFE && end - p >= CFE_SIZE) {
		/* RSM and SIPI have no IP: the bit set is a bad packet to libipt */
		unsigned type = p[2] & CFE_TYPE;
		*fup = p[2] & EXT_IP_BIT;
		n = *fup && (type == CFE_RSM || type == CFE_SIPI) ? 0 : CFE_SIZE;
	}
	return end - p >= n ? n : 0;
}

int mt_pkt_evd_size(const uint8_t *p, const uint8_t *end, unsigned *bit)
{
	if (end - p < EVD_SIZE)
		return 0;
	unsigned type = p[2] & EVD_TYPE;
	*bit = type < EVD_TYPES ? 1u << type : 0;
	return EVD_SIZE;
}

bool mt_pkt_followed_by(const uint8_t *p, const uint8_t *end, unsigned op, bool need_ip)
{
	unsigned ipc;
	while (p < end && *p == OP_PAD)
		p++;
	return p < end && (*p & 0x1f) == op && mt_pkt_ip_size(p, end, &ipc) && (ipc || !need_ip);
}

bool mt_pkt_followed_by_tip(const uint8_t *p, const uint8_t *end)
{
	while (p < end && *p == OP_PAD)
		p++;
	if (end - p >= PIP_SIZE && p[0] == OP_EXT && p[1] == EXT_PIP)
		p += PIP_SIZE;
	return mt_pkt_followed_by(p, end, IP_TIP, false);
}
