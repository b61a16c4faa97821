#include "storage/schema.h"

namespace perfloom::storage {

const std::vector<std::string>& schema_migrations() {
  static const std::vector<std::string> steps = {
      // 0 -> 1: sources, kernels, measurements, predictions, simulations.
      R"sql(
CREATE TABLE sources (
  id            INTEGER PRIMARY KEY,
  path          TEXT NOT NULL,
  format        TEXT NOT NULL,
  content_hash  TEXT NOT NULL UNIQUE,
  gpu_id        TEXT,
  gpu_name      TEXT,
  bytes         INTEGER NOT NULL,
  imported_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  provenance    TEXT
);
CREATE TABLE kernels (
  id            INTEGER PRIMARY KEY,
  source_id     INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  name          TEXT NOT NULL,
  family        TEXT NOT NULL DEFAULT 'unknown',
  op            TEXT,
  dtype         TEXT,
  shape_json    TEXT,
  grid          TEXT,
  block         TEXT,
  registers_per_thread INTEGER,
  shared_memory_bytes  INTEGER,
  launched_by   TEXT,
  start_us      REAL
);
CREATE INDEX kernels_source ON kernels(source_id, seq);
CREATE INDEX kernels_family ON kernels(family);
CREATE TABLE measurements (
  id            INTEGER PRIMARY KEY,
  kernel_id     INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
  latency_us    REAL NOT NULL CHECK (latency_us >= 0),
  method        TEXT NOT NULL,
  repetitions   INTEGER NOT NULL DEFAULT 1,
  p10_us        REAL,
  p90_us        REAL
);
CREATE INDEX measurements_kernel ON measurements(kernel_id);
CREATE TABLE predictions (
  id            INTEGER PRIMARY KEY,
  kernel_id     INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
  gpu_id        TEXT NOT NULL,
  model_version TEXT NOT NULL,
  pred_us       REAL NOT NULL,
  lo_us         REAL,
  hi_us         REAL,
  ceiling_us    REAL,
  bound         TEXT,
  UNIQUE (kernel_id, gpu_id, model_version)
);
CREATE INDEX predictions_gpu ON predictions(gpu_id, model_version);
CREATE TABLE simulations (
  id            INTEGER PRIMARY KEY,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  model         TEXT NOT NULL,
  gpu_id        TEXT NOT NULL,
  config_json   TEXT NOT NULL,
  summary_json  TEXT
);
CREATE TABLE simulation_requests (
  simulation_id INTEGER NOT NULL REFERENCES simulations(id) ON DELETE CASCADE,
  request       INTEGER NOT NULL,
  arrival_s     REAL NOT NULL,
  input_tokens  INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  ttft_ms       REAL,
  tpot_ms       REAL,
  e2e_ms        REAL,
  PRIMARY KEY (simulation_id, request)
);
)sql",
      // 1 -> 2: what the importers record (storage/kernel_store.h), and predictions by source for the
      // views (kernels by source is kernels_source). Every extra index costs each imported kernel.
      R"sql(
ALTER TABLE sources ADD COLUMN kernel_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN library TEXT;
ALTER TABLE kernels ADD COLUMN tile_json TEXT;
ALTER TABLE measurements ADD COLUMN gpu_id TEXT;
ALTER TABLE measurements ADD COLUMN counters_json TEXT;
ALTER TABLE measurements ADD COLUMN note TEXT;
ALTER TABLE predictions ADD COLUMN source_id INTEGER REFERENCES sources(id) ON DELETE CASCADE;
UPDATE predictions SET source_id = (SELECT k.source_id FROM kernels k WHERE k.id = predictions.kernel_id);
CREATE INDEX predictions_source ON predictions(source_id, gpu_id, model_version);
)sql",
      // 2 -> 3: the timeline (storage/timeline.h): each kernel's stream and the time its launch call
      // started on the CPU (NULL where the format has none), and the framework ops of a trace (torch.profiler cpu_op events, nsys NVTX ranges) with
      // their thread and nesting depth. Keyed by (source, seq) without a rowid: one b-tree, written in
      // order, that a source's ops are read and deleted by.
      R"sql(
ALTER TABLE kernels ADD COLUMN stream INTEGER;
ALTER TABLE kernels ADD COLUMN launch_us REAL;
CREATE TABLE cpu_ops (
  source_id     INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  pid           INTEGER NOT NULL,
  tid           INTEGER NOT NULL,
  start_us      REAL NOT NULL,
  dur_us        REAL NOT NULL CHECK (dur_us >= 0),
  name          TEXT NOT NULL,
  depth         INTEGER NOT NULL CHECK (depth >= 0),
  PRIMARY KEY (source_id, seq)
) WITHOUT ROWID;
)sql",
  };
  return steps;
}

}  // namespace perfloom::storage
