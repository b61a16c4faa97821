// `perfloom tune` end to end: the real binary, as users and scripts run it.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_process.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
const std::string kDb = "--db /tmp/perfloom-cli-tune-test.db";

std::size_t lines_starting_with_digit(const std::string& out) {
  std::istringstream is(out);
  std::string line;
  std::size_t n = 0;
  while (std::getline(is, line))
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) ++n;
  return n;
}
}  // namespace

TEST(CliTune, RanksConfigurationsWithTheWaveTable) {
  auto r = runPerfloom("tune --gemm 4096,4096,4096 --dtype bf16 --gpu h100-sxm --top 8 " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("method: wave-table"), std::string::npos) << r.out;
  // Where the candidates came from: the nearest measured shapes and the latency model's best of the whole table.
  EXPECT_NE(r.out.find("candidates: the nearest measured shapes' winners and the model's 10 best of the table's"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pred_us"), std::string::npos);
  EXPECT_NE(r.out.find("waves"), std::string::npos);
  EXPECT_NE(r.out.find("% full"), std::string::npos) << r.out;
  EXPECT_EQ(lines_starting_with_digit(r.out), 8u) << r.out;
  EXPECT_NE(r.out.find("ranked by the table's learned chooser, not by pred_us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Running a tuner configuration with cuBLASLt"), std::string::npos) << r.out;
  // The kernel variant: the custom option to set, and what its kernels showed (a configuration whose tile was never
  // timed with options shows "-").
  EXPECT_NE(r.out.find("  option  reason"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(option: cuBLASLt's custom option to set, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("raster "), std::string::npos) << r.out;
  // Each prediction with its 80% range, and what the range means.
  EXPECT_NE(r.out.find("pred_us         80% range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(80% range: where 80% of measured latencies fell around the table's predictions"),
            std::string::npos)
      << r.out;
}

TEST(CliTune, JsonHasRankedConfigurationsWithWavesAndReasons) {
  auto r = runPerfloom("tune --gemm 512,7168,2048 --dtype fp8e4m3 --gpu 'NVIDIA H200' --top 4 --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("gpu"), "h200");
  EXPECT_EQ(doc.at("method"), "wave-table");
  EXPECT_EQ(doc.at("gemm").at("dtype"), "fp8e4m3");
  ASSERT_EQ(doc.at("configs").size(), 4u);
  // The shipped table has a chooser: the order is its rank_score's, highest first.
  EXPECT_EQ(doc.at("ranked_by"), "chooser");
  double previous_rank_score = doc["configs"][0].at("rank_score").get<double>();
  int rank = 1;
  for (const auto& c : doc["configs"]) {
    EXPECT_LE(c.at("rank_score").get<double>(), previous_rank_score);
    previous_rank_score = c.at("rank_score").get<double>();
    EXPECT_EQ(c.at("rank"), rank++);
    EXPECT_GT(c.at("pred_us").get<double>(), 0.0);
    // The shipped table's 80% interval brackets its prediction.
    EXPECT_LT(c.at("lo_us").get<double>(), c.at("pred_us").get<double>());
    EXPECT_GT(c.at("hi_us").get<double>(), c.at("pred_us").get<double>());
    EXPECT_GE(c.at("waves").get<int>(), 1);
    const double fill = c.at("last_wave_fill").get<double>();
    EXPECT_GT(fill, 0.0);
    EXPECT_LE(fill, 1.0);
    EXPECT_GT(c.at("k_iters").get<int>(), 0);
    EXPECT_FALSE(c.at("reason").get<std::string>().empty());
    // cuBLASLt's orientation is the transpose of perfloom's.
    EXPECT_EQ(c.at("cublaslt_tile").get<std::string>(),
              std::to_string(c.at("tile_n").get<int>()) + "x" + std::to_string(c.at("tile_m").get<int>()));
    // The shipped table names each configuration's kernel variant (model/tuner/variant_model.h).
    if (c.contains("cublaslt_custom_option")) {
      EXPECT_GE(c.at("cublaslt_custom_option").get<int>(), 0);
      EXPECT_TRUE(c.at("variant").is_string());
    }
  }
  EXPECT_TRUE(doc["configs"][0].contains("cublaslt_custom_option")) << doc.dump(1);
}

TEST(CliTune, JsonLeavesOutTheChoosersScoreWhereItDidNotScore) {
  // The chooser scores the latency model's kChooserRows best of the list; the rest follow in the model's order,
  // without a rank_score.
  auto r = runPerfloom("tune --gemm 4096,14336,4096 --dtype bf16 --gpu h100 --top 100 --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  const auto& configs = doc.at("configs");
  ASSERT_GT(configs.size(), 16u);
  std::size_t scored = 0;
  double previous_score = 0;
  // Those the acceptance model predicts cuBLASLt refuses come last (CliTune.ConfigurationsLikelyRefusedComeLast).
  const double threshold = doc.at("refusal_threshold").get<double>();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].at("refusal_p").get<double>() >= threshold) continue;
    if (configs[i].contains("rank_score")) {
      EXPECT_EQ(scored, i) << "a scored configuration after an unscored one";
      ++scored;
    } else {
      if (i > scored) {
        EXPECT_GE(configs[i].at("score").get<double>(), previous_score) << i;
      }
      previous_score = configs[i].at("score").get<double>();
    }
  }
  EXPECT_EQ(scored, 16u);
}

TEST(CliTune, ConfigurationsLikelyRefusedComeLast) {
  // At this GEMM the shipped H200 table lists configurations cuBLASLt refused at similar shapes (the collector's runs:
  // 104x192 cluster 2x1, cuBLASLt's 192x104 cluster 1x2, at 515 of 832 lists GEMMs).
  auto r = runPerfloom("tune --gemm 5169,21056,5632 --dtype bf16 --gpu h200 --top 100 --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  const double threshold = doc.at("refusal_threshold").get<double>();
  EXPECT_GT(threshold, 0.0);
  EXPECT_LE(threshold, 1.0);
  std::size_t refused = 0;
  for (const auto& c : doc.at("configs")) {
    const double p = c.at("refusal_p").get<double>();
    EXPECT_GE(p, 0.0);
    EXPECT_LE(p, 1.0);
    if (p >= threshold) {
      ++refused;
      EXPECT_NE(c.at("reason").get<std::string>().find("cuBLASLt likely refuses it (p "), std::string::npos)
          << c.dump();
    } else {
      EXPECT_EQ(refused, 0u) << "a configuration predicted to run after one predicted refused: " << c.dump();
    }
  }
  EXPECT_GT(refused, 0u) << doc.dump(1);
  auto text = runPerfloom("tune --gemm 5169,21056,5632 --dtype bf16 --gpu h200 --top 100 " + kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(likely refuses: the table's acceptance model"), std::string::npos) << text.out;
  // Where none is predicted refused among those shown, no such note.
  auto top1 = runPerfloom("tune --gemm 5169,21056,5632 --dtype bf16 --gpu h200 --top 1 " + kDb);
  ASSERT_EQ(top1.exit_code, 0) << top1.err;
  EXPECT_EQ(top1.out.find("likely refuses"), std::string::npos) << top1.out;
}

TEST(CliTune, GpuWithoutATableUsesTheAnalyticalModelAndSaysSo) {
  auto r = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu l40s --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("method"), "analytical");
  EXPECT_EQ(doc.at("ranked_by"), "pred_us");
  const std::string note = doc.at("note").get<std::string>();
  EXPECT_NE(note.find("no tuner table for l40s"), std::string::npos) << note;
  EXPECT_NE(note.find("no ada GPU was tile-swept in 16bit"), std::string::npos) << note;
  EXPECT_EQ(doc.at("configs").size(), 5u);  // --top defaults to 5
  for (const auto& c : doc["configs"])
    EXPECT_FALSE(c.contains("cublaslt_custom_option")) << "no variant model without a table";
  auto text = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu l40s " + kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("option"), std::string::npos) << text.out;
  // Its latencies are scaled so that the first takes what `perfloom predict` answers for the GEMM.
  EXPECT_NE(note.find("latencies scaled so that the first takes the learned predictor's"), std::string::npos) << note;
  const fs::path kernels = fs::temp_directory_path() / (std::to_string(::getpid()) + "-tune-anchor.csv");
  std::ofstream(kernels) << "op,dtype,M,N,K\ngemm,fp16,2048,2048,2048\n";
  auto p = runPerfloom("predict --kernels " + kernels.string() + " --gpu l40s " + kDb);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::istringstream rows(p.out);
  std::string header, row;
  std::getline(rows, header);
  std::getline(rows, row);
  const std::size_t at = row.find(",l40s,");
  ASSERT_NE(at, std::string::npos) << p.out;
  const double predicted = std::stod(row.substr(at + 6));  // pred_us follows the gpu column
  EXPECT_NEAR(doc.at("anchor_us").get<double>(), predicted, 1e-3 * predicted);
  EXPECT_NEAR(doc["configs"][0].at("pred_us").get<double>(), predicted, 1e-3 * predicted);
  const std::size_t lo_at = row.find(',', at + 6) + 1;  // lo_us and hi_us follow pred_us
  const double lo = std::stod(row.substr(lo_at)), hi = std::stod(row.substr(row.find(',', lo_at) + 1));
  EXPECT_NEAR(doc["configs"][0].at("lo_us").get<double>(), lo, 1e-3 * lo);
  EXPECT_NEAR(doc["configs"][0].at("hi_us").get<double>(), hi, 1e-3 * hi);
  // Without loadable models the roofline's latencies stand, with a warning, and no anchor.
  auto f = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu l40s --json " + kDb,
                       "PERFLOOM_RESOURCES=/nonexistent");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const json plain = json::parse(f.out);
  EXPECT_FALSE(plain.contains("anchor_us"));
  EXPECT_EQ(plain.at("note").get<std::string>().find("scaled"), std::string::npos);
  EXPECT_NE(f.err.find("perfloom tune: learned models not used"), std::string::npos) << f.err;
  EXPECT_EQ(plain["configs"][0].at("config"), doc["configs"][0].at("config"));  // the same ranking
}

TEST(CliTune, ATablelessHopperGpuRanksWithTheLearnedPredictorAndWithoutItFallsBack) {
  auto r = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu h100-pcie --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("method"), "learned");
  EXPECT_NE(doc.at("note").get<std::string>().find("learned predictor"), std::string::npos);
  double last = 0;
  for (const auto& c : doc.at("configs")) {
    EXPECT_GE(c.at("pred_us").get<double>(), last);
    last = c.at("pred_us").get<double>();
  }
  // Without loadable models: the analytical model, and a warning that says why.
  auto f = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu h100-pcie --json " + kDb,
                       "PERFLOOM_RESOURCES=/nonexistent");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(json::parse(f.out).at("method"), "analytical");
  EXPECT_NE(f.err.find("perfloom tune: learned models not used"), std::string::npos) << f.err;
  // A GPU with a table never loads them: resources with the tuner tables and no models.
  const std::filesystem::path tables_only =
      std::filesystem::temp_directory_path() / ("perfloom-cli-tune-tables-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tables_only);
  std::error_code ec;
  std::filesystem::create_directory_symlink(std::filesystem::path(PERFLOOM_SOURCE_DIR) / "resources" / "tuner",
                                            tables_only / "tuner", ec);
  auto h = runPerfloom("tune --gemm 2048,2048,2048 --dtype fp16 --gpu h100-sxm --json " + kDb,
                       "PERFLOOM_RESOURCES=" + tables_only.string());
  std::filesystem::remove_all(tables_only, ec);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out).at("method"), "wave-table");
  EXPECT_EQ(h.err.find("perfloom tune:"), std::string::npos) << h.err;
}

TEST(CliTune, BadInputFailsWithAReason) {
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"tune --dtype bf16 --gpu h100-sxm", "needs --gemm"},
      {"tune --gemm 1,2 --dtype bf16 --gpu h100-sxm", "three positive integers"},
      {"tune --gemm 64,-1,64 --dtype bf16 --gpu h100-sxm", "three positive integers"},
      {"tune --gemm 64,64,64 --gpu h100-sxm", "needs --dtype"},
      {"tune --gemm 64,64,64 --dtype bf17 --gpu h100-sxm", "unknown --dtype 'bf17'"},
      {"tune --gemm 64,64,64 --dtype bf16", "needs --gpu"},
      {"tune --gemm 64,64,64 --dtype bf16 --gpu h10", "unknown GPU"},
      {"tune --gemm 64,64,64 --dtype bf16 --gpu h100-sxm --top 0", "--top must be an integer of at least 1"},
      {"tune --gemm 64,64,64 --dtype fp8e4m3 --gpu a100-sxm-80gb", "no fp8e4m3 tensor-core path"},
  };
  for (const auto& c : cases) {
    auto r = runPerfloom(c.args + " " + kDb);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

TEST(CliTune, PlanWritesACollectorShapeList) {
  const std::string out = "/tmp/perfloom-cli-tune-plan-" + std::to_string(::getpid()) + ".csv";
  auto r = runPerfloom("tune --plan --dtype bf16 --gpu h100-sxm --max-configs 3 --out " + out + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("points for 3 configurations"), std::string::npos) << r.err;
  std::ifstream in(out);
  std::string header, line;
  ASSERT_TRUE(std::getline(in, header));
  EXPECT_EQ(header.rfind("op,dtype,M,N,K,config,", 0), 0u) << header;
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(line.rfind("gemm,bf16,", 0), 0u) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 3u * 9u * 2u);  // per configuration: half wave + 4 boundaries x 2 sides, at 2 K lengths
  std::filesystem::remove(out);
}

TEST(CliTune, PlanWithGemmsWritesTheirTopConfigurationsWithTheirOptionsForTheCollector) {
  const std::string out = "/tmp/perfloom-cli-tune-top-" + std::to_string(::getpid()) + ".csv";
  auto r = runPerfloom("tune --gemm 1024,4096,4096 --gemm 512x7168x2048 --dtype bf16 --gpu h100-sxm --plan --out " +
                       out + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("6 configurations of 2 GEMMs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("perfloom-collect --sweep plan --plan " + out), std::string::npos) << r.err;
  // The same ranking as the table the command prints, rank by rank, with the option it names.
  auto j = json::parse(runPerfloom("tune --gemm 1024,4096,4096 --dtype bf16 --gpu h100-sxm --top 3 --json " + kDb).out);
  std::ifstream in(out);
  std::string header, line;
  ASSERT_TRUE(std::getline(in, header));
  EXPECT_EQ(header.rfind("op,dtype,M,N,K,config,", 0), 0u) << header;
  EXPECT_NE(header.find(",heuristic_rank,cublaslt_custom"), std::string::npos) << header;
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u);
  int named = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& c = j["configs"][i];
    EXPECT_EQ(
        rows[i].rfind("gemm,bf16,1024,4096,4096," + c["config"].get<std::string>() + "," +
                          c["cublaslt_tile"].get<std::string>() + "," + c["cublaslt_cluster"].get<std::string>() + ",",
                      0),
        0u)
        << rows[i];
    EXPECT_NE(rows[i].find("\"tune " + std::to_string(i + 1) + "\""), std::string::npos) << rows[i];
    // The option the table names, or an empty field where it names none.
    EXPECT_EQ(rows[i].substr(rows[i].rfind(',') + 1), c.contains("cublaslt_custom_option")
                                                          ? std::to_string(c["cublaslt_custom_option"].get<int>())
                                                          : std::string())
        << rows[i];
    named += c.contains("cublaslt_custom_option");
  }
  EXPECT_GT(named, 0) << j.dump();
  EXPECT_EQ(rows[3].rfind("gemm,bf16,512,7168,2048,", 0), 0u) << rows[3];
  std::filesystem::remove(out);
  // A bad shape among them: nothing written, the shape named.
  r = runPerfloom("tune --gemm 4096,4096,4096 --gemm 64,0,64 --dtype bf16 --gpu h100-sxm --plan --out " + out + " " +
                  kDb);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'64,0,64'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The loop's other end: perfloom-collect's measurement of a timing plan read back, each GEMM's fastest.
TEST(CliTune, TimedReadsTheCollectorsMeasurementOfATimingPlanBack) {
  const std::string file = "/tmp/perfloom-cli-tune-timed-" + std::to_string(::getpid()) + ".csv";
  const std::string head =
      "# format=perfloom-collector/1\n# sweep=plan\n# gpu_name=NVIDIA H200\n"
      "op,dtype,M,N,K,latency_us,kernel_name,tile,stages,splitk,cluster,heuristic_rank,sweep,source\n";
  auto row = [](const std::string& shape, double us, int rank, const std::string& source) {
    return "gemm,bf16," + shape + "," + std::to_string(us) +
           ",nvjet_sm90_tst_128x64_64x6_1x2_v_bz_TNT,64x128,64xAUTO,1,2x1x1," + std::to_string(rank) + ",plan," +
           source + "\n";
  };
  std::ofstream(file) << head << row("512,4096,4096", 20.0, 1, "plan:heuristic rep=1")
                      << row("512,4096,4096", 22.0, 1, "plan:heuristic rep=2")
                      << row("512,4096,4096", 19.5, 2, "plan:heuristic rep=1")
                      << row("512,4096,4096", 18.0, -2, "plan:128x64x64/s1/c1x2 tune 1 custom=5 rep=1")
                      << row("512,4096,4096", 18.4, -2, "plan:128x64x64/s1/c1x2 tune 1 custom=5 rep=2")
                      << row("512,4096,4096", 17.0, -2, "plan:128x128x64/s1/c2x1 tune 2 via=r3 custom=1 rep=1")
                      << row("512,4096,4096", 30.0, -2,
                             "plan:64x64x64/s1/c1x1 table 1 rep=1")  // another plan's row: ignored
                      << row("8,8192,8192", 9.0, 1, "plan:heuristic rep=1")
                      << row("8,8192,8192", 9.5, -2, "plan:8x64x64/s1/c1x2 tune 1 custom=1 rep=1");
  auto r = runPerfloom("tune --timed " + file + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("512x4096x4096         128x128x64/s1/c2x1 c1 (tune 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8x8192x8192           cuBLASLt heuristic 1"), std::string::npos) << r.out;
  auto j = json::parse(runPerfloom("tune --timed " + file + " --json " + kDb).out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["gpu"], "h200");
  EXPECT_EQ(j[0]["fastest"], "128x128x64/s1/c2x1 c1");
  EXPECT_EQ(j[0]["fastest_tune_rank"], 2);
  EXPECT_DOUBLE_EQ(j[0]["fastest_us"].get<double>(), 17.0);
  EXPECT_EQ(j[0]["first_choice"], "128x64x64/s1/c1x2 c5");
  EXPECT_DOUBLE_EQ(j[0]["first_choice_us"].get<double>(), 18.2);  // the median of its two runs
  EXPECT_DOUBLE_EQ(j[0]["cublaslt_default_us"].get<double>(), 21.0);
  EXPECT_DOUBLE_EQ(j[0]["cublaslt_heuristics_fastest_us"].get<double>(), 19.5);
  EXPECT_EQ(j[1]["fastest"], "heuristic 1");
  // Not a timing plan's measurement, and no file: refused, the file named.
  std::ofstream(file) << head << row("8,8192,8192", 9.0, 1, "plan:heuristic rep=1");
  r = runPerfloom("tune --timed " + file + " " + kDb);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file + ": no row of a timing plan"), std::string::npos) << r.err;
  std::filesystem::remove(file);
  r = runPerfloom("tune --timed " + file + " " + kDb);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
}

// `tune --moe`: the fused-MoE configurations per token count, and vLLM's configuration file.
TEST(CliTuneMoe, WritesVllmsConfigurationFileOfEachTokenCountsFirstChoice) {
  const fs::path dir = "/tmp/perfloom-cli-tune-moe-" + std::to_string(::getpid());
  fs::remove_all(dir);
  auto r = runPerfloom("tune --moe 128,768,4096,8 --dtype fp8 --gpu h200 --tokens 1,64,4096 --top 4 --json --out " +
                       dir.string() + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  const fs::path file = dir / "E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8.json";
  EXPECT_EQ(doc.at("config_file"), file.filename().string());
  EXPECT_EQ(doc.at("written"), file.string());
  ASSERT_TRUE(fs::exists(file)) << file;
  std::ifstream is(file);
  const json cfg = json::parse(is);
  const std::vector<std::string> keys = {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K",
                                         "GROUP_SIZE_M", "num_warps",    "num_stages"};
  ASSERT_EQ(cfg.size(), 3u) << cfg.dump();
  ASSERT_EQ(doc.at("tokens").size(), 3u);
  for (const auto& t : doc.at("tokens")) {
    const std::string T = std::to_string(t.at("tokens").get<int>());
    ASSERT_TRUE(cfg.contains(T)) << T << " " << cfg.dump();
    ASSERT_EQ(cfg.at(T).size(), keys.size()) << cfg.at(T).dump();
    const json& configs = t.at("configs");
    ASSERT_EQ(configs.size(), 4u);
    // The file holds the first of the ranking, which is ordered by predicted time.
    for (const auto& k : keys) {
      ASSERT_TRUE(cfg.at(T).at(k).is_number_integer()) << k;
      EXPECT_EQ(cfg.at(T).at(k), configs.at(0).at(k)) << T << " " << k;
    }
    for (std::size_t i = 0; i < configs.size(); ++i) {
      EXPECT_EQ(configs.at(i).at("rank"), i + 1);
      if (i > 0) {
        EXPECT_LE(configs.at(i - 1).at("pred_us").get<double>(), configs.at(i).at("pred_us").get<double>());
      }
      const double gemms = configs.at(i).at("gate_up").at("pred_us").get<double>() +
                           configs.at(i).at("down").at("pred_us").get<double>();
      EXPECT_NEAR(configs.at(i).at("pred_us").get<double>(), gemms, 1e-6 * gemms);
      EXPECT_NEAR(configs.at(i).at("speedup_vs_default").get<double>(),
                  t.at("engine_default").at("pred_us").get<double>() / configs.at(i).at("pred_us").get<double>(), 1e-9);
      EXPECT_GE(configs.at(i).at("gate_up").at("waves").get<double>(), 1.0);
      EXPECT_NE(configs.at(i).at("reason").get<std::string>().find("% full"), std::string::npos);
    }
    // The first choice is never predicted slower than the engine's default.
    EXPECT_LE(configs.at(0).at("pred_us").get<double>(), t.at("engine_default").at("pred_us").get<double>() * 1.000001);
  }
  // vLLM's default at 1 token (tokens <= E) and above E.
  EXPECT_EQ(doc.at("tokens").at(0).at("engine_default").at("config"), "16x32x64/g1/w4/s3");
  EXPECT_EQ(doc.at("tokens").at(2).at("engine_default").at("config"), "64x64x32/g8/w4/s3");
  fs::remove_all(dir);
}

TEST(CliTuneMoe, TheFileIsKeyedByVllmsTokenCountsAndNamedForTheGpuAndDtype) {
  const fs::path dir = "/tmp/perfloom-cli-tune-moe-list-" + std::to_string(::getpid());
  fs::remove_all(dir);
  auto r =
      runPerfloom("tune --moe 8,7168,4096,2 --dtype bf16 --gpu h100-sxm --top 1 --out " + dir.string() + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dflt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote "), std::string::npos) << r.out;
  const fs::path file = dir / "E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json";
  ASSERT_TRUE(fs::exists(file)) << r.out;
  std::ifstream is(file);
  const nlohmann::ordered_json cfg = nlohmann::ordered_json::parse(is);  // the file's order
  std::vector<int> tokens;
  for (const auto& [k, v] : cfg.items()) tokens.push_back(std::stoi(k));
  EXPECT_EQ(tokens,
            (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096}));
  fs::remove_all(dir);
  // Block fp8: the block shape in the name, and only BLOCK_SIZE_K 128 and BLOCK_SIZE_N a multiple of 128.
  auto b =
      runPerfloom("tune --moe 256,256,7168,8 --dtype fp8-block --gpu h200 --tokens 16,2048 --top 50 --json " + kDb);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json doc = json::parse(b.out);
  EXPECT_EQ(doc.at("config_file"), "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json");
  for (const auto& t : doc.at("tokens"))
    for (const auto& c : t.at("configs")) {
      EXPECT_EQ(c.at("BLOCK_SIZE_K"), 128);
      EXPECT_EQ(c.at("BLOCK_SIZE_N").get<int>() % 128, 0);
    }
}

TEST(CliTuneMoe, BadInputFailsWithAReason) {
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"tune --moe 128,768,4096 --dtype bf16 --gpu h200", "--moe wants four positive integers E,N,H,topk"},
      {"tune --moe 128,768,4096,8,1 --dtype bf16 --gpu h200", "--moe wants four positive integers"},
      {"tune --moe 0,768,4096,8 --dtype bf16 --gpu h200", "--moe wants four positive integers"},
      {"tune --moe 128,x,4096,8 --dtype bf16 --gpu h200", "got '128,x,4096,8'"},
      {"tune --moe 8,768,4096,9 --dtype bf16 --gpu h200", "topk 9 is above the 8 experts"},
      {"tune --moe 128,768,4096,8 --gpu h200", "--moe needs --dtype bf16, fp8 or fp8-block"},
      {"tune --moe 128,768,4096,8 --dtype fp16 --gpu h200", "--moe takes --dtype bf16, fp8 or fp8-block, got 'fp16'"},
      {"tune --moe 128,768,4096,8 --dtype fp8 --gpu a100-sxm-80gb", "has no fp8e4m3 tensor-core path"},
      {"tune --moe 128,768,4096,8 --dtype bf16 --gpu v100-sxm2", "has no bf16 tensor-core path"},
      {"tune --moe 128,768,4096,8 --dtype bf16", "needs --gpu"},
      {"tune --moe 128,768,4096,8 --dtype bf16 --gpu h200 --tokens 1,0", "--tokens wants positive integers"},
      {"tune --moe 128,768,4096,8 --dtype bf16 --gpu h200 --moe-efficiency 0.5,2,0.9", "--moe-efficiency wants"},
  };
  for (const auto& c : cases) {
    auto r = runPerfloom(c.args + " " + kDb);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}
