#!/usr/bin/env python3
"""pysite_lines.py - writes tests/unit/pysite_lines_<minor>.h: real line
tables of this interpreter (co_linetable, co_firstlineno) and the line of
each instruction as co_lines() gives it, for test_pysite.c's decoders.

    python3.10 tests/unit/pysite_lines.py > tests/unit/pysite_lines_10.h
    python3.11 tests/unit/pysite_lines.py > tests/unit/pysite_lines_11.h
"""
import sys

SRC = '''
def f(a, b):
    x = a + b
    for i in range(3):
        x += i
        if x > 10:
            break
    y = [k * 2
         for k in range(x)]
''' + '\n' * 300 + '''
    z = (a +
         b)
    try:
        z = 1 / 0
    except ZeroDivisionError:
        z = -1
''' + '\n' * 5000 + '''
    return x, y, z
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, 'co_code'):
            yield from codes(c)


minor = sys.version_info[1]
ns = {}
mod = compile(SRC, 'pysite_lines_src.py', 'exec')
print('/* Made by tests/unit/pysite_lines.py under Python %d.%d.%d: do not edit. */'
      % sys.version_info[:3])
for n, co in enumerate(codes(mod)):
    tab = co.co_linetable
    print('static const unsigned char lines%d_tab%d[] = {%s};' % (
        minor, n, ', '.join(str(b) for b in tab) or '0'))
    exp = []
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            exp.append((off // 2, -1 if line is None else line))
    print('static const int lines%d_exp%d[][2] = {%s};' % (
        minor, n, ', '.join('{%d, %d}' % e for e in exp)))
print('static const struct pysite_lines lines%d[] = {' % minor)
for n, co in enumerate(codes(mod)):
    print('  {"%s", %d, lines%d_tab%d, %d, lines%d_exp%d, sizeof lines%d_exp%d / sizeof *lines%d_exp%d},' % (
        co.co_name, co.co_firstlineno, minor, n, len(co.co_linetable), minor, n, minor, n, minor, n))
print('};')
