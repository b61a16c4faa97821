// The guarded file reader (model/file_reader.h) and the loaders that read through it: a named pipe,
// a device, a folder, an over-large file, a gzip bomb and deeply nested JSON are refused with the
// file's name and the reason, promptly and without a crash.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>

#include "model/calibration.h"
#include "model/compressed_text.h"
#include "model/features.h"
#include "model/file_reader.h"
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/sim/llm_config.h"

using namespace perfloom;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("perfloom-file-reader-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

fs::path make_fifo(const fs::path& p) {
  fs::remove(p);
  EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
  return p;
}

// Runs `f`, which must throw, within 5 s and returns its message. Where it blocks on the pipe
// `fifo`, a writer opened on it releases it, so that a failing test ends instead of hanging.
std::string message_within_5s(const std::function<void()>& f, const fs::path& fifo = {}) {
  auto result = std::async(std::launch::async, [&]() -> std::string {
    try {
      f();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "still reading after 5 s";
    if (!fifo.empty()) {
      const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
    }
  }
  return result.get();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kDeep = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";

}  // namespace

TEST(FileReader, RefusesANamedPipeWithoutBlocking) {
  const fs::path dir = temp_dir("fifo");
  const fs::path fifo = make_fifo(dir / "pipe.json");
  const std::string m = message_within_5s([&] { read_file_guarded(fifo, file_limits::gpu_spec); }, fifo);
  EXPECT_TRUE(has(m, fifo.string() + ": is a named pipe (FIFO), not a regular file")) << m;
  fs::remove_all(dir);
}

TEST(FileReader, RefusesDevicesFoldersAndMissingFilesByName) {
  EXPECT_EQ(message_within_5s([] { read_file_guarded("/dev/zero", file_limits::calibration); }),
            "/dev/zero: is a character device, not a regular file");
  const fs::path dir = temp_dir("folder");
  EXPECT_EQ(message_within_5s([&] { read_file_guarded(dir, file_limits::calibration); }),
            dir.string() + ": is a folder, not a regular file");
  EXPECT_EQ(message_within_5s([&] { read_file_guarded(dir / "none.json", file_limits::calibration); }),
            (dir / "none.json").string() + ": cannot be read: No such file or directory");
  fs::remove_all(dir);
}

TEST(FileReader, RefusesAFileOverItsKindsLimitWithItsSize) {
  const fs::path dir = temp_dir("size");
  const fs::path big = dir / "big.json";
  // A sparse file: its size is on disk at no cost.
  write(big, "");
  fs::resize_file(big, file_limits::gpu_spec.max_bytes + 1);
  EXPECT_EQ(message_within_5s([&] { read_file_guarded(big, file_limits::gpu_spec); }),
            big.string() + ": is 1048577 bytes; a GPU file may have at most 1048576 bytes (1 MiB)");
  // At the limit it is read.
  constexpr FileLimit small{"a small file", 10};
  write(big, std::string(10, 'x'));
  EXPECT_EQ(read_file_guarded(big, small), std::string(10, 'x'));
  write(big, std::string(11, 'x'));
  EXPECT_TRUE(has(message_within_5s([&] { read_file_guarded(big, small); }), "is 11 bytes; a small file may have"));
  fs::remove_all(dir);
}

TEST(FileReader, InflatesGzipOnlyUpToTheKindsLimit) {
  const fs::path dir = temp_dir("gzip");
  const fs::path gz = dir / "table.json.gz";
  write(gz, gzip_text(std::string(3 * 1024 * 1024, ' ')));  // 3 MiB of text in a few kilobytes
  constexpr FileLimit two_mib{"a test table", 1024 * 1024, 2 * 1024 * 1024};
  EXPECT_EQ(message_within_5s([&] { read_file_guarded(gz, two_mib); }),
            gz.string() + ": inflates to more than 2097152 bytes (2 MiB), the most a test table may hold");
  constexpr FileLimit four_mib{"a test table", 1024 * 1024, 4 * 1024 * 1024};
  EXPECT_EQ(read_file_guarded(gz, four_mib).size(), 3u * 1024 * 1024);
  // A kind that is not compressed reads the bytes as stored.
  constexpr FileLimit plain{"a test file", 1024 * 1024};
  EXPECT_TRUE(is_gzip(read_file_guarded(gz, plain)));
  // Cut short: zlib's reason, with the file's name once.
  const std::string whole = gzip_text("{\"a\": 1}");
  write(gz, whole.substr(0, whole.size() - 6));
  const std::string cut = message_within_5s([&] { read_file_guarded(gz, four_mib); });
  EXPECT_EQ(cut.rfind(gz.string() + ": corrupt gzip data", 0), 0u) << cut;
  fs::remove_all(dir);
}

TEST(FileReader, ASymbolicLinkIsRefusedWhereTheKindSaysSo) {
  const fs::path dir = temp_dir("link");
  write(dir / "secret.txt", "private");
  fs::create_symlink(dir / "secret.txt", dir / "MANIFEST.tsv");
  EXPECT_EQ(message_within_5s([&] { read_file_guarded(dir / "MANIFEST.tsv", file_limits::dataset_manifest); }),
            (dir / "MANIFEST.tsv").string() + ": is a symbolic link, which is not followed here");
  // Followed for a kind the user names directly.
  EXPECT_EQ(read_file_guarded(dir / "MANIFEST.tsv", file_limits::calibration), "private");
  fs::remove_all(dir);
}

TEST(FileReader, EachLoaderRefusesANamedPipeWithItsOwnError) {
  const fs::path dir = temp_dir("loaders");
  const fs::path fifo = make_fifo(dir / "x.json");
  const std::string why = ": is a named pipe (FIFO), not a regular file";
  std::string m = message_within_5s(
      [&] {
        try {
          read_calibration_file(fifo);
        } catch (const CalibrationError& e) {
          throw std::runtime_error(std::string("calibration: ") + e.what());
        }
      },
      fifo);
  EXPECT_EQ(m, "calibration: " + fifo.string() + why);
  m = message_within_5s(
      [&] {
        GpuDatabase db = GpuDatabase::builtin();
        try {
          db.add_directory(dir);
        } catch (const GpuSpecError& e) {
          throw std::runtime_error(std::string("gpu: ") + e.what());
        }
      },
      fifo);
  EXPECT_EQ(m, "gpu: " + fifo.string() + why);
  m = message_within_5s(
      [&] {
        try {
          sim::load_llm_config(fifo.string());
        } catch (const sim::LlmConfigError& e) {
          throw std::runtime_error(std::string("llm: ") + e.what());
        }
      },
      fifo);
  EXPECT_EQ(m, "llm: " + fifo.string() + why);
  const fs::path models = dir / "models";
  fs::create_directories(models);
  make_fifo(models / "manifest.json");
  m = message_within_5s(
      [&] {
        try {
          LearnedPredictor::load(models);
        } catch (const ModelLoadError& e) {
          throw std::runtime_error(std::string("models: ") + e.what());
        }
      },
      models / "manifest.json");
  EXPECT_EQ(m, "models: " + (models / "manifest.json").string() + why);
  fs::remove_all(dir);
}

// 100,000 levels of nesting, through each loader's file: an error naming the file, not a stack overflow.
TEST(FileReader, DeeplyNestedJsonInEachLoadersFileIsAnError) {
  const fs::path dir = temp_dir("deep");
  write(dir / "deep.json", kDeep);
  auto expect_deep = [&](const std::string& m, const std::string& kind) {
    EXPECT_TRUE(has(m, "deep.json")) << kind << ": " << m.substr(0, 300);
    EXPECT_TRUE(has(m, "nests deeper than 64 levels")) << kind << ": " << m.substr(0, 300);
    EXPECT_LT(m.size(), 1000u) << kind;
  };
  expect_deep(message_within_5s([&] { read_calibration_file(dir / "deep.json"); }), "calibration");
  expect_deep(message_within_5s([&] { GpuDatabase::builtin().add_directory(dir); }), "GPU file");
  expect_deep(message_within_5s([&] { sim::load_llm_config((dir / "deep.json").string()); }), "LLM config");
  // A learned model: its manifest, then one booster file (XGBoost's reader recurses per level).
  const fs::path models = dir / "models";
  fs::create_directories(models);
  write(models / "manifest.json", kDeep);
  std::string m = message_within_5s([&] { LearnedPredictor::load(models); });
  EXPECT_TRUE(has(m, "manifest.json") && has(m, "nests deeper than 64 levels")) << m.substr(0, 300);
  nlohmann::json manifest = {{"schema", "perfloom-models/1"}, {"feature_version", kFeatureVersion}};
  std::vector<std::string> names;
  for (auto n : feature_names()) names.emplace_back(n);
  manifest["features"] = names;
  manifest["families"] = {{"gemm", {{"file", "gemm.json"}}}};
  write(models / "manifest.json", manifest.dump());
  write(models / "gemm.json", "{\"learner\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  m = message_within_5s([&] { LearnedPredictor::load(models); });
  EXPECT_TRUE(has(m, "gemm.json") && has(m, "nests deeper than 64 levels")) << m.substr(0, 300);
  fs::remove_all(dir);
}

TEST(FileReader, NestingIsCountedOutsideStringsOnly) {
  EXPECT_FALSE(json_nests_deeper_than("{\"a\": \"[[[[[[\"}", 2));
  EXPECT_FALSE(json_nests_deeper_than("{\"a\": \"\\\"[[[[\"}", 2));
  EXPECT_TRUE(json_nests_deeper_than("{\"a\": [[{}]]}", 3));
  EXPECT_FALSE(json_nests_deeper_than("{\"a\": [[{}]]}", 4));
}

// Input echoed in a message is cut to about 80 characters, whatever its size.
TEST(FileReader, HugeNamesAreEchoedCut) {
  const std::string huge(5 * 1000 * 1000, 'g');
  GpuDatabase db = GpuDatabase::builtin();
  std::string m = message_within_5s([&] { db.get(huge); });
  EXPECT_LT(m.size(), 300u);
  EXPECT_TRUE(has(m, "(5000000 bytes)")) << m;
  Calibration c;
  c.file = "c.json";
  c.gpu_name = huge;
  m = message_within_5s([&] { db.add_calibration(c); });
  EXPECT_LT(m.size(), 300u);
  // A GPU file's id, name and aliases have a length limit of their own (they are echoed in tables).
  const fs::path dir = temp_dir("names");
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/gpus/h100-sxm.json");
  nlohmann::json g = nlohmann::json::parse(in);
  g["id"] = std::string(100000, 'a');
  write(dir / "long.json", g.dump());
  m = message_within_5s([&] { db.add_directory(dir); });
  EXPECT_TRUE(has(m, "field 'id': is 100000 characters long; at most 64")) << m.substr(0, 300);
  EXPECT_LT(m.size(), 300u);
  g["id"] = "long-alias";
  g["name"] = "Long Alias";
  g["aliases"] = {std::string(1000, 'b')};
  write(dir / "long.json", g.dump());
  m = message_within_5s([&] { db.add_directory(dir); });
  EXPECT_TRUE(has(m, "field 'aliases[0]': is 1000 characters long; at most 256")) << m.substr(0, 300);
  fs::remove_all(dir);
}

// The fields the audit named, each holding 100,000 levels of nesting (a message once dump()ed them),
// and a GPU file's compute_capability of 100,000 characters (once matched by std::regex): errors.
TEST(FileReader, TheAuditedFieldsRefuseDeepValuesAndLongIdentifiers) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::ifstream gin(std::string(PERFLOOM_SOURCE_DIR) + "/gpus/h100-sxm.json");
  const std::string gpu = std::string(std::istreambuf_iterator<char>(gin), {});
  std::ifstream cin(std::string(PERFLOOM_SOURCE_DIR) + "/resources/calibration/h100-sxm.json");
  const std::string cal = std::string(std::istreambuf_iterator<char>(cin), {});
  std::ifstream lin(std::string(PERFLOOM_SOURCE_DIR) + "/resources/llm/llama-3-8b.json");
  const std::string llm = std::string(std::istreambuf_iterator<char>(lin), {});
  // `text` with the value of its top-level `key` replaced by the JSON text `value`.
  auto with = [](const std::string& text, const std::string& key, const std::string& value) {
    nlohmann::json doc = nlohmann::json::parse(text);
    doc[key] = "@@VALUE@@";
    std::string out = doc.dump();
    return out.replace(out.find("\"@@VALUE@@\""), 11, value);
  };
  auto expect_refused = [](const std::function<void()>& parse, const std::string& what, const std::string& part) {
    const std::string m = message_within_5s(parse);
    EXPECT_TRUE(has(m, part)) << what << ": " << m.substr(0, 300);
    EXPECT_LT(m.size(), 1000u) << what;
  };
  const std::string nests = "nests deeper than 64 levels";
  expect_refused([&] { parse_gpu_spec(with(gpu, "aliases", deep), "g.json"); }, "aliases", nests);
  expect_refused([&] { parse_calibration(with(cal, "schema", deep), "c.json"); }, "schema", nests);
  expect_refused([&] { parse_calibration(with(cal, "gpu_name", deep), "c.json"); }, "gpu_name", nests);
  expect_refused([&] { sim::parse_llm_config(with(llm, "num_hidden_layers", deep), "config.json"); },
                 "num_hidden_layers", nests);
  const std::string qwen = "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"mlp_only_layers\": [1, " + deep + "]}";
  expect_refused([&] { sim::parse_llm_config(qwen, "config.json"); }, "mlp_only_layers", nests);
  // 60 levels pass the parser; the message names the type only.
  const std::string sixty = std::string(60, '[') + std::string(60, ']');
  expect_refused([&] { parse_gpu_spec(with(gpu, "aliases", "[" + sixty + "]"), "g.json"); }, "aliases",
                 "field 'aliases[0]'");
  expect_refused([&] { parse_calibration(with(cal, "gpu_name", sixty), "c.json"); }, "gpu_name", "array");
  const std::string cc = with(gpu, "compute_capability", "\"" + std::string(100000, '9') + "\"");
  expect_refused([&] { parse_gpu_spec(cc, "g.json"); }, "compute_capability", "(100000 bytes)");
  const std::string cc_dot = with(gpu, "compute_capability", "\"9." + std::string(100000, '0') + "x\"");
  expect_refused([&] { parse_gpu_spec(cc_dot, "g.json"); }, "compute_capability", "must look like");
}
