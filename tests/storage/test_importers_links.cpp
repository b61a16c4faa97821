// What an import reads besides the file or folder it was given: a public dataset's MANIFEST.tsv
// only when it is a regular file (not a named pipe, not a symbolic link to something else), and
// no symbolic link out of an imported folder.
#include <sys/stat.h>

#include <chrono>
#include <future>

#include "storage/importers/collector_csv_importer.h"
#include "storage/importers/public_dataset_importer.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

const fs::path kVidurFile = "vidur/data/profiling/compute/h100/microsoft/phi-2/mlp.csv.gz";

// A public-dataset tree holding one real Vidur file, as data/public holds it.
void vidur_tree(const fs::path& root) {
  fs::create_directories((root / kVidurFile).parent_path());
  fs::copy_file(source_dir() / "data/public" / kVidurFile, root / kVidurFile);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string all(const std::vector<std::string>& warnings) {
  std::string s;
  for (const auto& w : warnings) s += w + "\n";
  return s;
}

// The import of `path`, which must finish within 10 s (a named pipe read without care blocks for ever).
RecordingSink import_within_10s(const Importer& importer, const fs::path& path) {
  auto done = std::async(std::launch::async, [&] { return run_importer(importer, path); });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the import of " << path << " still runs after 10 s";
    std::_Exit(1);  // a thread blocked on a pipe cannot be joined
  }
  return done.get();
}

}  // namespace

TEST(ImportLinks, ARegularManifestAboveTheFileIsQuoted) {
  TempDir dir;
  vidur_tree(dir.path());
  write_file(dir / "MANIFEST.tsv",
             "dir\tpath\tnote\nvidur\tdata/profiling/compute/h100/microsoft/phi-2/mlp.csv.gz\tROW\n");
  const RecordingSink s = import_within_10s(PublicDatasetImporter(), dir.path() / kVidurFile);
  EXPECT_GT(s.kernels.size(), 100u);
  EXPECT_TRUE(has(s.provenance_text, "\tROW")) << s.provenance_text;
}

TEST(ImportLinks, ASymlinkedManifestIsNotCopiedIntoTheProvenance) {
  TempDir dir;
  vidur_tree(dir.path());
  write_file(dir / "secret.txt", "dir\tpath\nSECRET-BYTES\n");
  fs::create_symlink(dir / "secret.txt", dir / "MANIFEST.tsv");
  const RecordingSink s = import_within_10s(PublicDatasetImporter(), dir.path() / kVidurFile);
  EXPECT_GT(s.kernels.size(), 100u);
  EXPECT_FALSE(has(s.provenance_text, "SECRET-BYTES")) << s.provenance_text;
  EXPECT_TRUE(has(s.provenance_text, (dir / "MANIFEST.tsv").string() + " not read")) << s.provenance_text;
  EXPECT_TRUE(has(all(s.warnings), "MANIFEST.tsv: is a symbolic link, which is not followed here")) << all(s.warnings);
}

TEST(ImportLinks, ANamedPipeAsManifestIsNotReadAndDoesNotBlock) {
  TempDir dir;
  vidur_tree(dir.path());
  ASSERT_EQ(::mkfifo((dir / "MANIFEST.tsv").c_str(), 0600), 0);
  const RecordingSink s = import_within_10s(PublicDatasetImporter(), dir.path() / kVidurFile);
  EXPECT_GT(s.kernels.size(), 100u);
  EXPECT_TRUE(has(all(s.warnings), "MANIFEST.tsv: is a named pipe (FIFO), not a regular file")) << all(s.warnings);
  // A folder with that MANIFEST.tsv: the same.
  const RecordingSink folder = import_within_10s(PublicDatasetImporter(), dir.path());
  EXPECT_GT(folder.kernels.size(), 100u);
  EXPECT_TRUE(has(all(folder.warnings), "named pipe")) << all(folder.warnings);
}

TEST(ImportLinks, APublicDatasetFolderDoesNotFollowLinksOutOfIt) {
  TempDir outside, dir;
  vidur_tree(outside.path());
  vidur_tree(dir.path());
  // A second model folder whose CSV is a link to the copy outside the imported folder.
  const fs::path link = dir.path() / "vidur/data/profiling/compute/h100/microsoft/phi-3/mlp.csv.gz";
  fs::create_directories(link.parent_path());
  fs::create_symlink(outside.path() / kVidurFile, link);
  const RecordingSink s = import_within_10s(PublicDatasetImporter(), dir.path());
  const RecordingSink one = import_within_10s(PublicDatasetImporter(), dir.path() / kVidurFile);
  EXPECT_EQ(s.kernels.size(), one.kernels.size()) << "the linked file was read";
  EXPECT_TRUE(has(all(s.warnings), "1 symbolic link leads out of the folder and was not read (vidur/data/"))
      << all(s.warnings);
}

TEST(ImportLinks, ACollectorFolderReadsLinksInsideItAndNotOutOfIt) {
  TempDir outside, dir;
  const fs::path csv = source_dir() / "tests/fuzz/seeds/collector_csv/gemm.csv";
  fs::copy_file(csv, dir / "a.csv");
  fs::copy_file(csv, outside / "b.csv");
  fs::create_symlink(outside / "b.csv", dir / "out.csv");
  const RecordingSink one = import_within_10s(CollectorCsvImporter(), dir / "a.csv");
  ASSERT_GT(one.kernels.size(), 0u);
  RecordingSink s = import_within_10s(CollectorCsvImporter(), dir.path());
  EXPECT_EQ(s.kernels.size(), one.kernels.size()) << "the link out of the folder was read";
  EXPECT_TRUE(has(all(s.warnings), "1 symbolic link leads out of the folder and was not read (out.csv -> "))
      << all(s.warnings);
  // A link to a file of the folder itself is read.
  fs::create_symlink(dir / "a.csv", dir / "same.csv");
  s = import_within_10s(CollectorCsvImporter(), dir.path());
  EXPECT_EQ(s.kernels.size(), 2 * one.kernels.size());
  // Only links out: no CSV to read, and the refusal says why.
  TempDir only;
  fs::create_symlink(outside / "b.csv", only / "out.csv");
  try {
    run_importer(CollectorCsvImporter(), only.path());
    ADD_FAILURE() << "imported a folder of links out of it";
  } catch (const ImportError& e) {
    EXPECT_TRUE(has(e.what(), "symbolic link leads out of the folder")) << e.what();
  }
}
