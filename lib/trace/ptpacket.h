/* ptpacket: Intel PT packets as mt's packet reader takes them: their
 * layouts (Intel SDM vol. 3, "Intel Processor Trace": the header byte,
 * then the payload) and the size of each packet it reads, 0 where one is
 * cut short or is not what mt reads (libipt reads on from there). The
 * sizes hot in the scan and the reader are inline. */
#ifndef MT_PTPACKET_H
#define MT_PTPACKET_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stdint.h>

enum {
	OP_PAD = 0x00, OP_EXT = 0x02, OP_TSC = 0x19, OP_MODE = 0x99, OP_MTC = 0x59,
	EXT_PSB = 0x82, EXT_PSBEND = 0x23, EXT_CBR = 0x03, EXT_TNT64 = 0xa3, EXT_PIP = 0x43, EXT_VMCS = 0xc8,
	EXT_TMA = 0x73,
	/* PT notes: PTWRITE (low five bits 0x12; bit 7: a FUP with its IP
	 * follows; bits 6:5: 4 or 8 payload bytes), EXSTOP (bit 7: IP),
	 * MWAIT (hints, extensions: 4 bytes each), PWRE (2 bytes: hw bit 3,
	 * sub-state bits 11:8, state bits 15:12), PWRX (5 bytes: deepest bits
	 * 3:0, last bits 7:4, wake reason bits 11:8) */
	EXT_PTW = 0x12, EXT_PTW_MASK = 0x1f, EXT_IP_BIT = 0x80, EXT_EXSTOP = 0x62, EXT_MWAIT = 0xc2, EXT_PWRE = 0x22,
	EXT_PWRX = 0xa2, MWAIT_SIZE = 10, PWRE_SIZE = 4, PWRX_SIZE = 7, EXSTOP_SIZE = 2,
	PWRX_WAKE_INT = 0x100, PWRX_WAKE_STORE = 0x400, PWRX_WAKE_HW = 0x800, PWRE_HW = 0x8,
	/* the TIP family: the low five bits; the top three say how much IP follows */
	IP_TIP = 0x0d, IP_PGE = 0x11, IP_PGD = 0x01, IP_FUP = 0x1d,
	MODE_EXEC_64 = 0x01, /* MODE.Exec, CS.L set, CS.D clear; 0x02: 32-bit, 0x00: 16-bit */
	MODE_EXEC_IF = 0x04, /* MODE.Exec's RFLAGS.IF (Event Trace); libipt 2.0.5 ignores it */
	MODE_TSX_NONE = 0x20, /* MODE.TSX, no transaction */
	PSB_SIZE = 16, PSBEND_SIZE = 2, CBR_SIZE = 4, TNT64_SIZE = 8, PIP_SIZE = 8, VMCS_SIZE = 7, TSC_SIZE = 8, MODE_SIZE = 2,
	MTC_SIZE = 2, TMA_SIZE = 7,
	/* TRIG (libipt 2.2, unknown to Debian's 2.0.5): a trigger fired; flags
	 * byte (MT_TRIG_*), trigger id */
	OP_TRIG = 0xd9, TRIG_SIZE = 3, TRIG_ICNT_SIZE = 2,
	/* Event Trace (libipt 2.1): CFE (type bits 4:0, IP bit 7: a FUP with
	 * its IP follows; a vector byte), EVD (type bits 4:0; an 8-byte
	 * payload that describes the next CFE) */
	EXT_CFE = 0x13, CFE_SIZE = 4, CFE_TYPE = 0x1f, CFE_INTR = 1, CFE_RSM = 4, CFE_SIPI = 5, CFE_VMEXIT = 8,
	CFE_VMEXIT_INTR = 9,
	EXT_EVD = 0x53, EVD_SIZE = 11, EVD_TYPE = 0x1f, EVD_TYPES = 3,
};
/* TRIG's flag bits: a FUP with its IP follows, a 2-byte instruction count
 * follows, MULT (the reader's TRIG events keep them, ptquery.h) */
enum { MT_TRIG_IP = 0x80, MT_TRIG_ICNTV = 0x40, MT_TRIG_MULT = 0x20 };

/* n bytes at p, little-endian */
static inline uint64_t mt_pkt_load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The payload bytes of an IP packet by its IPBytes (0 to 7: below 8); -1:
 * reserved. */
static inline int mt_pkt_ip_bytes(unsigned ipc)
{
	static const int8_t ip_bytes[8] = {0, 2, 4, 6, 6, -1, 8, -1};
	return ip_bytes[ipc]; /* ipc: a header's top 3 bits */
}

/* The size of the IP packet at p when complete and well-formed, else 0;
 * *ipc gets its IPBytes. */
static inline int mt_pkt_ip_size(const uint8_t *p, const uint8_t *end, unsigned *ipc)
{
	*ipc = p[0] >> 5;
	int n = mt_pkt_ip_bytes(*ipc);
	return n < 0 || end - p < 1 + n ? 0 : 1 + n;
}

/* The size of the CYC packet at p when complete and within libipt's
 * limits (its payload fits 64 bits), else 0; *value gets its cycles. */
static inline int mt_pkt_cyc_size(const uint8_t *p, const uint8_t *end, uint64_t *value)
{
	uint64_t v = p[0] >> 3;
	unsigned shl = 5;
	int n = 1;
	bool ext = p[0] & 4;
	while (ext) {
		if (end - p <= n || shl + 7 > 64)
			return 0;
		uint8_t b = p[n++];
		ext = b & 1;
		v |= (uint64_t)(b >> 1) << shl;
		shl += 7;
	}
	*value = v;
	return n;
}

/* A MODE.Exec payload mt reads: 64-, 32- or 16-bit (CS.L and CS.D both
 * set is reserved), with or without IF */
static inline bool mt_pkt_exec_mode_ok(uint8_t b)
{
	return (b & ~MODE_EXEC_IF) <= 2;
}

static inline enum pt_exec_mode mt_pkt_exec_mode(uint8_t b)
{
	b &= 3;
	return b == MODE_EXEC_64 ? ptem_64bit : b ? ptem_32bit : ptem_16bit;
}

/* Whether a complete PSB starts at p. */
bool mt_pkt_is_psb(const uint8_t *p, const uint8_t *end);
/* The first PSB at or after p, found as libipt finds it: in a longer run
 * of its 02 82 pairs, the PSB is the run's last 16 bytes; NULL: none. */
const uint8_t *mt_pkt_find_psb(const uint8_t *p, const uint8_t *end);

/* The bytes of the TRIG packet at p with the FUP that carries its IP (its
 * IP bit set), 0 when cut short or that FUP is missing; *fup: the FUP's
 * offset in them (0: none), *ipc its IPBytes. Tracing is not changed by it:
 * its FUP is the trigger's, not an asynchronous branch. */
int mt_pkt_trig_size(const uint8_t *p, const uint8_t *end, int *fup, unsigned *ipc);

/* The size of the PT note at p (an OP_EXT packet: PTWRITE, EXSTOP, MWAIT,
 * PWRE, PWRX, CFE), 0 when it is none or cut short; *fup: it is bound to
 * the FUP after it. An MWAIT is bound to the FUP of the EXSTOP with an IP
 * that follows it; an EXSTOP without one leaves it without an IP (libipt
 * HEAD's reading: 2.0.5 bound it to any next FUP, one that ended tracing
 * included). */
int mt_pkt_note_size(const uint8_t *p, const uint8_t *end, bool *fup);

/* The EVD at p when complete, else 0; *bit: its type's bit, 1 << type
 * (0: a type libipt ignores). */
int mt_pkt_evd_size(const uint8_t *p, const uint8_t *end, unsigned *bit);

/* Whether the next packet after p but PADs is a complete IP packet of
 * kind op (IP_*; with an IP, if need_ip). */
bool mt_pkt_followed_by(const uint8_t *p, const uint8_t *end, unsigned op, bool need_ip);

/* Whether the next packets after p but PADs are an optional PIP (a CR3
 * change the interrupt makes: libipt binds it to the TIP) and a complete
 * TIP. */
bool mt_pkt_followed_by_tip(const uint8_t *p, const uint8_t *end);

#endif
