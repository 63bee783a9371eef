#!/usr/bin/env python3
"""Hold mt-pt2events --pt against ptxed on the ptt runs recorded with an
address filter (ptxed's --filter:addrN_cfg/_a/_b options: the SKL014 tests),
giving mt the same configuration (--filter-addr N:FROM-TO[:stop]).

usage: ptt_filter.py MT-PT2EVENTS PTT-DIR

../shared's compare.py runs mt without the recording's filter, so there no
decoder could apply erratum SKL014; this runs the same comparison (its own
functions: ptxed's listing parsed, mt's stream parsed, the flows aligned,
instructions and errors counted) with the filter given. Prints a line per
run and "ptt filter runs matching ptxed: N/M"; exit 0 when all match."""
import json
import os
import subprocess
import sys


def filter_args(opts):
    """ptxed's --filter:addrN_cfg/_a/_b -> mt's --filter-addr N:A-B[:stop]"""
    f = {}
    for k, o in enumerate(opts):
        if o.startswith('--filter:addr'):
            n, field = o[len('--filter:addr'):].split('_')
            f.setdefault(int(n), {})[field] = int(opts[k + 1], 0)
    args = []
    for n, v in sorted(f.items()):
        if v.get('cfg'):
            args.append('--filter-addr=%d:%#x-%#x%s' % (n, v['a'], v['b'], ':stop' if v['cfg'] == 2 else ''))
    return args


def main():
    mt, ptt = sys.argv[1], sys.argv[2]
    sys.dont_write_bytecode = True  # ../shared is not ours to write in
    sys.path.insert(0, ptt)
    import compare
    cases = json.load(open(os.path.join(ptt, 'cases.json')))['cases']
    good = total = 0
    for case in cases:
        extra = filter_args(case['ptxed_opts'])
        if not extra:
            continue
        for run in case['runs']:
            total += 1
            lst = os.path.join(ptt, 'cases', case['test'], run['lst'])
            p_insns, p_err, _, p_ovf, p_flow = compare.parse_ptxed(compare.read_listing(lst))
            cmd = compare.mt_command(mt, case, run, None) + extra
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            why = []
            if r.returncode not in (0, 1):
                why.append('exit %d' % r.returncode)
            else:
                m_insns, m_err, m_ovf, m_flow = compare.parse_mt(r.stdout, r.stderr)
                if m_insns != p_insns:
                    why.append('insns %s vs %s' % (p_insns, m_insns))
                if len(m_err) != len(p_err) or m_ovf != p_ovf:
                    why.append('errors %d vs %d' % (len(p_err), len(m_err)))
                if compare.align(p_flow, m_flow):
                    why.append('flow differs')
            name = case['test'] + ('@' + run['cpu'] if run['cpu'] else '')
            print('%s\t%s' % (name, '; '.join(why) if why else 'match'))
            good += not why
    print('ptt filter runs matching ptxed: %d/%d' % (good, total))
    return 0 if good == total and total else 1


if __name__ == '__main__':
    sys.exit(main())
