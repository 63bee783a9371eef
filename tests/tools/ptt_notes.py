#!/usr/bin/env python3
"""Hold mt-pt2events' PT notes (ptwrite, mwait, pwre, pwrx, exstop, vmcs,
cfe, trig)
against libipt's ptxed on libipt's own ptt tests (../shared/testdata/
libipt-ptt: the tests, compiled with pttc, and ptxed's listing of each).

usage: ptt_notes.py MT-PT2EVENTS PTT-DIR

For every run whose listing has a note, mt-pt2events --pt --power decodes
the test and its notes must be ptxed's: for each kind, the same notes in
the same order, each with ptxed's values (payload; hints, ext; C-states,
hardware flag; wake reason; VMCS base; Event Trace's type, vector and EVD
payloads; a trigger's bits and MULT), its IP where ptxed prints one (for a cfe, where mt has one: mt
gives a CFE without its IP bit none, libipt the interrupt's FUP's), and
for a ptwrite, mwait or exstop bound to an instruction the same number of
instructions decoded before it. (The order between notes of different
kinds is not compared: libipt's instruction decoder holds standalone notes
back behind one bound to an IP, which mt reports as the trace gives them.)
Prints a line per run and "ptt notes matching ptxed: N/M"; exit 0 when all
match."""
import json
import os
import re
import subprocess
import sys

INSN = re.compile(r'^(\? )?[0-9a-f]{16} (?:[0-9a-f]{2} )+')
IP = r'(?:, ip: ([0-9a-f]{16}))?'
NOTES = [
    ('ptwrite', re.compile(r'^ptwrite: ([0-9a-f]+)' + IP + r'$'),
     lambda m: {'payload': int(m.group(1), 16)}),
    ('mwait', re.compile(r'^mwait ([0-9a-f]+) ([0-9a-f]+)' + IP + r'$'),
     lambda m: {'hints': int(m.group(1), 16), 'ext': int(m.group(2), 16)}),
    ('pwre', re.compile(r'^pwre c(\d+)\.(\d+)( hw)?()$'),
     lambda m: {'cstate': int(m.group(1)), 'substate': int(m.group(2)), 'hw': bool(m.group(3))}),
    ('pwrx', re.compile(r'^pwrx (int|st|hw|\?): c(\d+) \(c(\d+)\)()$'),
     lambda m: {'wake': {'int': 'int', 'st': 'store', 'hw': 'hw', '?': 'other'}[m.group(1)],
                'cstate': int(m.group(2)), 'deepest': int(m.group(3))}),
    ('exstop', re.compile(r'^exstop' + IP + r'$'), lambda m: {}),
    ('vmcs', re.compile(r'^vmcs, base: ([0-9a-f]{16})' + IP + r'$'),
     lambda m: {'base': int(m.group(1), 16)}),
]
# Event Trace (libipt HEAD's ptxed): "[interrupt 14, cr2: ..., ip: ...]",
# "[vmexit, intr: 14, vmxr: ..., vmxq: ...]", "[sipi: ce]", "[iret, ip: ...]"
CFE_NAMES = {'interrupt': 'intr', 'iret': 'iret', 'smi': 'smi', 'rsm': 'rsm', 'init': 'init', 'sipi': 'sipi',
             'vmexit': 'vmexit', 'vmentry': 'vmentry', 'shutdown': 'shutdown', 'uintr': 'uintr',
             'uiret': 'uiret', 'swintr': 'swintr', 'syscall': 'syscall'}


def cfe_values(m):
    v = {'type': CFE_NAMES[m.group(1)]}
    if m.group(2):                      # "interrupt 14", "swintr 128": decimal
        v['vector'] = int(m.group(2))
    if m.group(3):                      # "sipi: ce": hex
        v['vector'] = int(m.group(3), 16)
    for key, val in re.findall(r', (intr|cr2|vmxr|vmxq): ([0-9a-f]+)', m.group(4)):
        if key == 'intr':               # a VM exit for an interrupt, decimal
            v['type'] = 'vmexit_intr'
            v['vector'] = int(val)
        else:
            v[key] = int(val, 16)
    return v


NOTES.append(('cfe', re.compile(r'^(' + '|'.join(CFE_NAMES) + r')(?: (\d+))?(?:: ([0-9a-f]+))?'
                                r'((?:, (?:intr|cr2|vmxr|vmxq): [0-9a-f]+)*)' + IP + r'$'), cfe_values))
# TRIG (libipt 2.2's ptxed): "[trig 1a, mult, ip: ...]"
NOTES.append(('trig', re.compile(r'^trig ([0-9a-f]{2})(, mult)?' + IP + r'(?:, icnt: \d+)?$'),
              lambda m: {'id': int(m.group(1), 16), 'mult': bool(m.group(2))}))
BOUND = {'ptwrite', 'mwait', 'exstop'}


def ptxed_notes(lines):
    """[(kind, values, ip or None, instructions before it)]"""
    out, insns = [], 0
    for line in lines:
        if INSN.match(line):
            insns += 1
            continue
        if not line.startswith('['):
            continue
        text = re.sub(r'^\[[0-9a-f]{16}  ', '[', line)[1:].rstrip(']')
        for kind, rx, values in NOTES:
            m = rx.match(text)
            if m:
                ip = m.group(m.re.groups)
                out.append((kind, values(m), int(ip, 16) if ip else None, insns))
    return out


def mt_notes(text):
    out, insns = [], 0
    for line in text.splitlines():
        if line.startswith('#'):
            continue
        col = line.split('\t')
        kv = dict(c.split('=', 1) for c in col[6:] if '=' in c)
        insns += int(kv.get('insn', 0))
        if col[3] not in BOUND | {'pwre', 'pwrx', 'vmcs', 'cfe', 'trig'}:
            continue
        v = {}
        for k in ('payload', 'hints', 'ext', 'base', 'cr2', 'vmxq', 'vmxr', 'id'):
            if k in kv:
                v[k] = int(kv[k], 16)
        for k in ('cstate', 'substate', 'deepest', 'vector'):
            if k in kv:
                v[k] = int(kv[k])
        if col[3] == 'pwre':
            v['hw'] = kv.get('hw') == '1'
        if 'wake' in kv:
            v['wake'] = kv['wake']
        if col[3] == 'cfe':
            v['type'] = kv['type']
        if col[3] == 'trig':
            v['mult'] = kv.get('mult') == '1'
        out.append((col[3], v, int(col[4], 16), insns))
    return out


def main():
    mt, ptt = sys.argv[1], sys.argv[2]
    sys.dont_write_bytecode = True  # ../shared is not ours to write in
    sys.path.insert(0, ptt)
    import compare  # its listing reader and its mt command line (image, cpu)
    cases = json.load(open(os.path.join(ptt, 'cases.json')))['cases']
    good = total = 0
    for c in cases:
        for run in c['runs']:
            lst = os.path.join(ptt, 'cases', c['test'], run['lst'])
            want = ptxed_notes(compare.read_listing(lst))
            if not want:
                continue
            total += 1
            cmd = compare.mt_command(mt, c, run, None) + ['--power']
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=10)
            got = mt_notes(p.stdout)
            why = []
            for kind, _, _ in NOTES:
                w = [x for x in want if x[0] == kind]
                g = [x for x in got if x[0] == kind]
                if len(w) != len(g):
                    why.append('%s: ptxed %d, mt %d' % (kind, len(w), len(g)))
                    continue
                for a, b in zip(w, g):
                    if a[1] != b[1]:
                        why.append('%s: ptxed %s, mt %s' % (kind, a[1], b[1]))
                    elif a[2] is not None and a[2] != b[2] and (kind != 'cfe' or b[2]):
                        why.append('%s: ptxed ip %#x, mt %#x' % (kind, a[2], b[2]))
                    elif kind in BOUND and a[2] is not None and a[3] != b[3]:
                        why.append('%s: ptxed %d insns before it, mt %d' % (kind, a[3], b[3]))
            name = c['test'] + ('@' + run['cpu'] if run['cpu'] else '')
            print('%s\t%d notes\t%s' % (name, len(want), '; '.join(why) if why else 'match'))
            good += not why
    print('ptt notes matching ptxed: %d/%d' % (good, total))
    return 0 if good == total and total else 1


if __name__ == '__main__':
    sys.exit(main())
