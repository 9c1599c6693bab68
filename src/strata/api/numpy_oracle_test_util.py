"""The numpy side of NumpyOracle (numpy_oracle_test_util.h): evaluates each case.

    .venv/bin/python numpy_oracle_test_util.py DIR

DIR holds prelude.py (helpers the cases call), cases.txt (one case per line:
id, number of inputs, expression, tab-separated) and the inputs
in_<id>_<k>.npy. Writes out_<id>_<j>.npy and count_<id>.txt per case, or
err_<id>.txt ("ValueError: ...") when the expression raises; prints "ok".
"""
import sys
import warnings

import numpy as np

warnings.simplefilter('ignore')
d = sys.argv[1]
exec(open(d + '/prelude.py').read())
for line in open(d + '/cases.txt').read().split('\n'):
    if not line:
        continue
    i, n, expr = line.split('\t', 2)
    ns = dict(globals())
    for k in range(int(n)):
        ns['abcdefgh'[k]] = np.load('%s/in_%s_%d.npy' % (d, i, k))
    try:
        with np.errstate(all='ignore'):
            r = eval(expr, ns)
        if not isinstance(r, tuple):
            r = (r,)
        for j, v in enumerate(r):
            # np.array keeps 0-d arrays 0-d (ascontiguousarray would not).
            np.save('%s/out_%s_%d.npy' % (d, i, j), np.array(np.asarray(v), order='C'))
        open('%s/count_%s.txt' % (d, i), 'w').write(str(len(r)))
    except Exception as e:
        open('%s/err_%s.txt' % (d, i), 'w').write(type(e).__name__ + ': ' + str(e))
print('ok')
