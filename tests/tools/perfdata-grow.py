#!/usr/bin/env python3
# perfdata-grow.py SRC DST comm K NIDS | mmap2 K | mmap2obj K | renames A B: a perf.data (file mode)
# made larger where a reader's costs grow (issue 25), the rest untouched
# (perf script -D reads the result):
#   comm K NIDS: K more copies of the first COMM record, and NIDS ids no
#     record carries ahead of attr 0's own ids (a large attr id table);
#   mmap2 K: K more MMAP2 records after the first, each a distinct file that
#     is not there (/nonexistent/libN.so) at its own address;
#   mmap2obj K: K more MMAP2 records after the first, each of the first's
#     own file (there: its code is read) at its own address, where no
#     code runs;
#   forks K: after the first COMM, K new threads of its process, each a
#     FORK (from the COMM's thread) and a COMM naming it, 1 ns apart;
#   renames A B: after the first COMM, three more of its thread, in file
#     order A at its time + 3 ns, B at + 2, A at + 1 (in time order: A, B,
#     A: the thread's latest name is A).
import struct
import sys

src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
k = int(sys.argv[4]) if mode != 'renames' else 0
b = bytearray(open(src, 'rb').read())
assert b[:8] == b'PERFILE2'
attr_size, = struct.unpack_from('<Q', b, 16)
attrs_off, attrs_size = struct.unpack_from('<QQ', b, 24)
data_off, data_size = struct.unpack_from('<QQ', b, 40)
flags = b[72:104]


def first_record(want):
    p = data_off
    while p < data_off + data_size:
        typ, misc, size = struct.unpack_from('<IHH', b, p)
        if typ == want:
            return p, misc, size
        p += size
    sys.exit('no record of type %d' % want)


if mode == 'renames':
    p, misc, size = first_record(3)
    rec = bytes(b[p:p + size])
    sample_type, = struct.unpack_from('<Q', b, attrs_off + 24)
    attr_flags, = struct.unpack_from('<Q', b, attrs_off + 40)
    assert attr_flags & (1 << 18), 'no sample_id_all'
    # the sample_id trailer: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER
    sizes = [(1 << 1, 8), (1 << 2, 8), (1 << 6, 8), (1 << 9, 8), (1 << 7, 8), (1 << 16, 8)]
    trailer = sum(n for bit, n in sizes if sample_type & bit)
    assert sample_type & (1 << 2), 'no time'
    toff = size - trailer + (8 if sample_type & (1 << 1) else 0)
    t0, = struct.unpack_from('<Q', rec, toff)
    out = []
    for name, dt in ((sys.argv[4], 3), (sys.argv[5], 2), (sys.argv[4], 1)):
        nm = name.encode() + b'\0'
        nm += b'\0' * ((-(8 + len(nm))) % 8)
        body = bytearray(rec[:16]) + nm + rec[size - trailer:]
        struct.pack_into('<IHH', body, 0, 3, misc & ~0x2000, len(body))  # not COMM_EXEC
        struct.pack_into('<Q', body, 16 + len(nm) + (8 if sample_type & (1 << 1) else 0), t0 + dt)
        out.append(bytes(body))
    ins = b''.join(out)
elif mode == 'forks':
    p, misc, size = first_record(3)
    rec = bytes(b[p:p + size])
    sample_type, = struct.unpack_from('<Q', b, attrs_off + 24)
    assert sample_type & (1 << 1) and sample_type & (1 << 2), 'no tid or time in sample_id'
    sizes = [(1 << 1, 8), (1 << 2, 8), (1 << 6, 8), (1 << 9, 8), (1 << 7, 8), (1 << 16, 8)]
    trailer = rec[size - sum(n for bit, n in sizes if sample_type & bit):]
    pid, tid = struct.unpack_from('<II', rec, 8)
    t0, = struct.unpack_from('<Q', trailer, 8)
    out = []
    for i in range(k):
        ntid = 1000000 + i
        tr = bytearray(trailer)
        struct.pack_into('<IIQ', tr, 0, pid, ntid, t0 + 1 + i)
        fork = struct.pack('<IHHIIIIQ', 7, 0, 0, pid, pid, ntid, tid, t0 + 1 + i) + bytes(tr)
        fork = fork[:6] + struct.pack('<H', len(fork)) + fork[8:]
        nm = b'w%d\0' % i
        nm += b'\0' * ((-(16 + len(nm))) % 8)
        comm = struct.pack('<IHHII', 3, 0, 0, pid, ntid) + nm + bytes(tr)
        comm = comm[:6] + struct.pack('<H', len(comm)) + comm[8:]
        out += [fork, comm]
    ins = b''.join(out)
elif mode == 'comm':
    p, misc, size = first_record(3)
    ins = bytes(b[p:p + size]) * k
else:
    p, misc, size = first_record(10)
    rec = bytes(b[p:p + size])
    # pid, tid, start, len, pgoff, maj, min, ino, ino_gen, prot, flags: then the name
    fn_off = 8 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4
    end = rec.index(b'\0', fn_off)
    trailer = rec[((end + 1 + 7) & ~7):]
    out = []
    for i in range(k):
        if mode == 'mmap2obj':
            name = rec[fn_off:end + 1]
        else:
            name = b'/nonexistent/lib%d.so\0' % i
        name += b'\0' * ((-(fn_off + len(name))) % 8)
        body = bytearray(rec[:fn_off]) + name + trailer
        struct.pack_into('<IHH', body, 0, 10, misc, len(body))
        struct.pack_into('<QQ', body, 16, 0x10000000000 + 0x10000 * i, 0x1000)
        out.append(bytes(body))
    ins = b''.join(out)
at = p + size
b[at:at] = ins
struct.pack_into('<Q', b, 48, data_size + len(ins))
# feature sections: one (offset, size) per set bit, after the data
nfeat = sum(bin(x).count('1') for x in flags)
fs = data_off + data_size + len(ins)
for i in range(nfeat):
    off, sz = struct.unpack_from('<QQ', b, fs + 16 * i)
    if off >= at:
        struct.pack_into('<Q', b, fs + 16 * i, off + len(ins))
if mode == 'comm':
    nids = int(sys.argv[5])
    ids_off, ids_size = struct.unpack_from('<QQ', b, attrs_off + attr_size - 16)
    if ids_off >= at:
        ids_off += len(ins)
    own = b[ids_off:ids_off + ids_size]
    new_off = len(b)
    b += b''.join(struct.pack('<Q', (1 << 62) + i) for i in range(nids)) + own
    struct.pack_into('<QQ', b, attrs_off + attr_size - 16, new_off, 8 * nids + ids_size)
open(dst, 'wb').write(b)
