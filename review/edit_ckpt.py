#!/usr/bin/env python3
"""Rewrite a retrograd checkpoint's setting (src/train/checkpoint.h v1 layout), fixing the CRC.
usage: edit_ckpt.py IN OUT KEY VALUE|--delete   (VALUE '@dup' appends a duplicate key entry)"""
import struct, sys, zlib
src, dst, key, value = sys.argv[1:5]
b = open(src, 'rb').read()
assert b[:8] == b'RETROGRD'
ver, flags, plen = struct.unpack_from('<IIQ', b, 8)
p = b[24:24 + plen]
o = 0
def rd_str():
    global o
    n, = struct.unpack_from('<I', p, o); s = p[o + 4:o + 4 + n]; o += 4 + n; return s
name = rd_str(); cfg = rd_str()
n, = struct.unpack_from('<I', p, o); o += 4
settings = [(rd_str(), rd_str()) for _ in range(n)]
rest = p[o:]
k = key.encode()
if value == '--delete':
    settings = [(a, v) for a, v in settings if a != k]
elif value.startswith('@dup:'):
    settings.append((k, value[5:].encode()))
else:
    settings = [(a, value.encode() if a == k else v) for a, v in settings]
    if k not in [a for a, _ in settings]: settings.append((k, value.encode()))
def ws(s): return struct.pack('<I', len(s)) + s
np = ws(name) + ws(cfg) + struct.pack('<I', len(settings)) + b''.join(ws(a) + ws(v) for a, v in settings) + rest
out = b'RETROGRD' + struct.pack('<IIQ', ver, flags, len(np)) + np + struct.pack('<I', zlib.crc32(np) & 0xffffffff)
open(dst, 'wb').write(out)
for a, v in settings: print(a.decode(), '=', v.decode()[:80])
