# Minimal ctypes binding to libxgboost 1.7 (the project's), no numpy.
import array, ctypes as C, os
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
L = C.CDLL("libxgboost.so.0")
L.XGBGetLastError.restype = C.c_char_p
def chk(rc):
    if rc != 0: raise RuntimeError(L.XGBGetLastError().decode())
class DM:
    """rows: a list of rows of ncol floats; labels per row; groups: query group sizes; weights: per row, or per
    group under a ranking objective."""
    def __init__(self, rows, ncol, labels=None, groups=None, weights=None):
        n = len(rows)
        flat = array.array('f', (v for r in rows for v in r))
        self.h = C.c_void_p()
        chk(L.XGDMatrixCreateFromMat((C.c_float * len(flat)).from_buffer(flat), C.c_uint64(n), C.c_uint64(ncol),
                                     C.c_float(float("nan")), C.byref(self.h)))
        for name, values in ((b"label", labels), (b"weight", weights)):
            if values is not None:
                a = array.array('f', values)
                chk(L.XGDMatrixSetFloatInfo(self.h, name, (C.c_float * len(a)).from_buffer(a), C.c_uint64(len(a))))
        if groups is not None:
            g = array.array('I', groups)
            chk(L.XGDMatrixSetUIntInfo(self.h, b"group", (C.c_uint * len(g)).from_buffer(g), C.c_uint64(len(g))))
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
