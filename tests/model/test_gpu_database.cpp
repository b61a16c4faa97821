#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/gpu_database.h"

using namespace perfloom;
using nlohmann::json;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

json h100File() {
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/gpus/h100-sxm.json");
  return json::parse(in);
}

// Expects parse_gpu_spec to refuse `doc` naming `field` and a reason containing `reason`.
void expectRefused(const json& doc, const std::string& field, const std::string& reason) {
  try {
    parse_gpu_spec(doc.dump(), "gpus/test.json");
    FAIL() << "accepted a file with a bad " << field;
  } catch (const GpuSpecError& e) {
    EXPECT_EQ(e.file(), "gpus/test.json");
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.reason().find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gpus/test.json"), std::string::npos);
  }
}

}  // namespace

TEST(GpuDatabase, EmbedsEveryFileOfGpusFolder) {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PERFLOOM_SOURCE_DIR) + "/gpus"))
    if (e.path().extension() == ".json") ++files;
  EXPECT_EQ(db().size(), files);
  EXPECT_GE(db().size(), 30u) << "the issue asks for at least 30 GPUs";
}

TEST(GpuDatabase, H100SxmDenseBf16PeakIs989Tflops) {
  const GpuSpec& h100 = db().get("h100-sxm");
  auto bf16 = h100.peak_flops_per_s(Dtype::bf16);
  ASSERT_TRUE(bf16.has_value());
  EXPECT_NEAR(*bf16 / 1e12, 989.4, 989.4 * 0.01);
  EXPECT_NEAR(*h100.peak_flops_per_s(Dtype::fp8e4m3) / 1e12, 1978.9, 1978.9 * 0.01);
  EXPECT_NEAR(*h100.peak_flops_per_s(Dtype::tf32) / 1e12, 494.7, 494.7 * 0.01);
  EXPECT_NEAR(h100.fp32_flops_per_s() / 1e12, 61.8, 61.8 * 0.02);  // 67 TF at the 1980 MHz max clock
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_gb_s, 3350);
  EXPECT_EQ(h100.sm_count, 132);
}

TEST(GpuDatabase, KnownFiguresOfOtherGpus) {
  EXPECT_NEAR(db().get("h200").memory_bandwidth_gb_s, 4800, 48);
  EXPECT_EQ(db().get("h200").sm_count, 132);
  EXPECT_NEAR(*db().get("a100-sxm-80gb").peak_flops_per_s(Dtype::bf16) / 1e12, 312, 312 * 0.01);
  EXPECT_NEAR(db().get("a100-sxm-80gb").memory_bandwidth_gb_s, 2039, 20);
  EXPECT_NEAR(*db().get("l40s").peak_flops_per_s(Dtype::fp16) / 1e12, 362, 362 * 0.02);
  EXPECT_NEAR(*db().get("t4").peak_flops_per_s(Dtype::fp16) / 1e12, 65, 65 * 0.02);
  EXPECT_EQ(db().get("b200").architecture, "blackwell");
}

TEST(GpuDatabase, FindsDriverNamesAndShortNamesCaseInsensitively) {
  EXPECT_EQ(db().get("NVIDIA H100 80GB HBM3").id, "h100-sxm");
  EXPECT_EQ(db().get("h100").id, "h100-sxm");
  EXPECT_EQ(db().get("H100-SXM").id, "h100-sxm");
  EXPECT_EQ(db().get("NVIDIA A100-SXM4-80GB").id, "a100-sxm-80gb");
  EXPECT_EQ(db().get("Tesla T4").id, "t4");
  EXPECT_EQ(db().find("no such gpu"), nullptr);
  try {
    db().get("h10");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm"), std::string::npos) << "suggests close ids: " << e.what();
  }
}

TEST(GpuDatabase, EveryGpuIsCoherent) {
  for (const auto& g : db().all()) {
    SCOPED_TRACE(g.id);
    const bool fp8_arch = g.architecture == "ada" || g.architecture == "hopper" || g.architecture == "blackwell" ||
                          g.architecture == "cdna3" || g.architecture == "cdna4";
    if (!fp8_arch) {
      EXPECT_FALSE(g.supports(Dtype::fp8e4m3));
    }
    if (g.architecture == "volta" || g.architecture == "turing" || g.architecture == "pascal") {
      EXPECT_FALSE(g.supports(Dtype::bf16));
    }
    if (g.architecture != "blackwell" && g.architecture != "cdna4") {
      EXPECT_FALSE(g.supports(Dtype::fp4));
    }
    // Tensor cores run at least as fast as the FMA lanes wherever they exist.
    if (auto half = g.peak_flops_per_s(Dtype::fp16)) {
      EXPECT_GT(*half, g.fp32_flops_per_s());
    }
    EXPECT_FALSE(g.aliases.empty()) << "needs the driver-reported name";
    EXPECT_GT(g.l2_cache_mib, 0);
    EXPECT_LE(g.max_shared_memory_per_block_kib, g.shared_memory_per_sm_kib);
  }
}

TEST(GpuSpecValidation, AcceptsTheShippedFile) {
  GpuSpec g = parse_gpu_spec(h100File().dump(), "gpus/h100-sxm.json");
  EXPECT_EQ(g.id, "h100-sxm");
  EXPECT_EQ(g.interconnect.nvlink_bandwidth_gb_s, 900);
  EXPECT_EQ(g.sources.at("sm_count").substr(0, 6), "NVIDIA");
}

TEST(GpuSpecValidation, RefusesNegativeAbsurdAndMistypedFigures) {
  json d = h100File();
  d["sm_count"] = -4;
  expectRefused(d, "sm_count", "between");
  d = h100File();
  d["memory_bandwidth_gb_s"] = 3.35e9;  // someone wrote bytes/s
  expectRefused(d, "memory_bandwidth_gb_s", "between");
  d = h100File();
  d["boost_clock_mhz"] = "1830";
  expectRefused(d, "boost_clock_mhz", "expected a number");
  d = h100File();
  d["sm_count"] = 131.5;
  expectRefused(d, "sm_count", "whole number");
  d = h100File();
  d["tensor_flops_per_sm_per_clock"]["fp9"] = 100;
  expectRefused(d, "tensor_flops_per_sm_per_clock.fp9", "unknown dtype");
  d = h100File();
  d["interconnect"]["nvlink_bandwidth_gb_s"] = -1;
  expectRefused(d, "interconnect.nvlink_bandwidth_gb_s", "between");
}

TEST(GpuSpecValidation, RefusesMissingRequiredUnknownAndUnsourcedFields) {
  json d = h100File();
  d.erase("sm_count");
  expectRefused(d, "sm_count", "required");
  d = h100File();
  d["sm_cout"] = 132;
  d["sources"]["sm_cout"] = "typo";
  expectRefused(d, "sm_cout", "not a known field");
  d = h100File();
  d["sources"].erase("memory_bandwidth_gb_s");
  expectRefused(d, "memory_bandwidth_gb_s", "sources");
  d = h100File();
  d["sources"]["l3_cache_mib"] = "made up";
  expectRefused(d, "sources.l3_cache_mib", "names no figure");
  d = h100File();
  d["schema"] = "perfloom-gpu/2";
  expectRefused(d, "schema", "perfloom-gpu/1");
  d = h100File();
  d["architecture"] = "kepler2";
  expectRefused(d, "architecture", "unknown architecture");
}

TEST(GpuSpecValidation, RefusesTextThatIsNotJson) {
  try {
    parse_gpu_spec("{\"id\": \"x\",", "gpus/broken.json");
    FAIL();
  } catch (const GpuSpecError& e) {
    EXPECT_EQ(e.file(), "gpus/broken.json");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
  EXPECT_THROW(parse_gpu_spec("[1,2]", "gpus/array.json"), GpuSpecError);
  EXPECT_THROW(parse_gpu_spec("", "gpus/empty.json"), GpuSpecError);
}

TEST(GpuDatabaseDirectory, AddsUserFilesAllOrNothing) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "perfloom-test-gpus";
  fs::remove_all(dir);
  fs::create_directories(dir);
  json good = h100File();
  good["id"] = "h100-lab";
  good["name"] = "Our lab's H100 at a lower clock";
  good["aliases"] = json::array({"lab-h100"});
  good["boost_clock_mhz"] = 1600;
  good.erase("max_clock_mhz");
  good["sources"].erase("max_clock_mhz");
  std::ofstream(dir / "a-good.json") << good.dump();
  json clash = good;
  clash["id"] = "other";
  clash["aliases"] = json::array({"H100"});  // already names h100-sxm
  std::ofstream(dir / "b-clash.json") << clash.dump();

  GpuDatabase d = GpuDatabase::builtin();
  const std::size_t before = d.size();
  try {
    d.add_directory(dir);
    FAIL() << "accepted an alias that names another GPU";
  } catch (const GpuSpecError& e) {
    EXPECT_NE(e.file().find("b-clash.json"), std::string::npos);
    EXPECT_EQ(e.field(), "aliases");
  }
  EXPECT_EQ(d.size(), before) << "nothing of the folder is kept after a bad file";
  EXPECT_EQ(d.find("lab-h100"), nullptr);

  fs::remove(dir / "b-clash.json");
  d.add_directory(dir);
  EXPECT_EQ(d.size(), before + 1);
  EXPECT_NEAR(*d.get("lab-h100").peak_flops_per_s(Dtype::bf16) / 1e12, 132 * 4096 * 1.6e9 / 1e12, 0.1);
  fs::remove_all(dir);
}
