#!/usr/bin/env python3
# nobits-relaplt.py IN OUT: a copy of the ELF IN whose .rela.plt is made
# SHT_NOBITS and claims 2^62 bytes, the rest untouched: a section size that
# the file does not hold (issue 25: it hung mt-symbolize's add_plt).
import struct
import sys

b = bytearray(open(sys.argv[1], 'rb').read())
shoff, = struct.unpack_from('<Q', b, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3a)
stroff, = struct.unpack_from('<Q', b, shoff + shstrndx * shentsize + 0x18)
for i in range(shnum):
    h = shoff + i * shentsize
    name, = struct.unpack_from('<I', b, h)
    if b[stroff + name:stroff + name + 10] == b'.rela.plt\0':
        struct.pack_into('<I', b, h + 4, 8)           # sh_type = SHT_NOBITS
        struct.pack_into('<Q', b, h + 0x20, 1 << 62)  # sh_size
        open(sys.argv[2], 'wb').write(b)
        sys.exit(0)
sys.exit('no .rela.plt')
