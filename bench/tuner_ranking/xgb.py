# Minimal ctypes binding to libxgboost 1.7 (the project's), no numpy.
import ctypes as C, os
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
L = C.CDLL("libxgboost.so.0")
L.XGBGetLastError.restype = C.c_char_p
def chk(rc):
    if rc != 0: raise RuntimeError(L.XGBGetLastError().decode())
class DM:
    def __init__(self, rows, ncol, labels=None, groups=None):
        n = len(rows)
        flat = (C.c_float * (n * ncol))()
        i = 0
        for r in rows:
            for v in r:
                flat[i] = v; i += 1
        self.h = C.c_void_p()
        chk(L.XGDMatrixCreateFromMat(flat, C.c_uint64(n), C.c_uint64(ncol), C.c_float(float("nan")), C.byref(self.h)))
        if labels is not None:
            lab = (C.c_float * n)(*labels)
            chk(L.XGDMatrixSetFloatInfo(self.h, b"label", lab, C.c_uint64(n)))
        if groups is not None:
            g = (C.c_uint * len(groups))(*groups)
            chk(L.XGDMatrixSetUIntInfo(self.h, b"group", g, C.c_uint64(len(groups))))
        self.n = n
    def __del__(self):
        L.XGDMatrixFree(self.h)
class Booster:
    def __init__(self, dtrain, params, rounds):
        self.h = C.c_void_p()
        arr = (C.c_void_p * 1)(dtrain.h)
        chk(L.XGBoosterCreate(arr, C.c_uint64(1), C.byref(self.h)))
        for k, v in params.items():
            chk(L.XGBoosterSetParam(self.h, k.encode(), str(v).encode()))
        for i in range(rounds):
            chk(L.XGBoosterUpdateOneIter(self.h, i, dtrain.h))
    def predict(self, dm):
        n = C.c_uint64(); out = C.POINTER(C.c_float)()
        chk(L.XGBoosterPredict(self.h, dm.h, 0, 0, 0, C.byref(n), C.byref(out)))
        return [out[i] for i in range(n.value)]
    def __del__(self):
        L.XGBoosterFree(self.h)
