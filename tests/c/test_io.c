/* Tests of src/io: listing (trees, list files, explicit lists), the batch
 * plan (shards, shuffles, epochs, padding) against a brute-force simulation,
 * reader metadata, and reading with its errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/rng.h"
#include "io/file_reader.h"
#include "io/path_table.h"
#include "io/sampler.h"
#include "test.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------ */

static char tmp_root[64];

static void make_tmp_root(void) {
  snprintf(tmp_root, sizeof tmp_root, "/tmp/ladle_test_io_XXXXXX");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    exit(2);
  }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_tmp_root(void) { nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* tmp_root + "/" + rel, in a rotating set of static buffers. */
static const char *tpath(const char *rel) {
  static char bufs[8][512];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", tmp_root, rel);
  return b;
}

static void mkdir_t(const char *rel) {
  if (mkdir(tpath(rel), 0755) != 0 && errno != EEXIST) {
    perror(tpath(rel));
    exit(2);
  }
}

static void write_t(const char *rel, const char *text) {
  FILE *f = fopen(tpath(rel), "wb");
  if (!f) {
    perror(tpath(rel));
    exit(2);
  }
  fputs(text, f);
  fclose(f);
}

static void symlink_t(const char *target, const char *rel) {
  if (symlink(target, tpath(rel)) != 0) {
    perror(tpath(rel));
    exit(2);
  }
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* A reader over `n` made-up paths (nothing is read from disk). */
static ladle__file_reader *fake_reader(int n, int shuffle, uint64_t seed, int shard, int shards,
                                       int stick, int pad, int batch) {
  static char names[64][24];
  static const char *files[64];
  for (int i = 0; i < n && i < 64; i++) {
    snprintf(names[i], sizeof names[i], "f%02d.jpg", i);
    files[i] = names[i];
  }
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  p.files = files;
  p.num_files = n;
  p.random_shuffle = shuffle;
  p.seed = seed;
  p.shard_id = shard;
  p.num_shards = shards;
  p.stick_to_shard = stick;
  p.pad_last_batch = pad;
  p.batch_size = batch;
  ladle__file_reader *r = NULL;
  /* Failures are checked by the callers (some expect one). */
  if (ladle__file_reader_create(&p, &r) != LADLE_OK) return NULL;
  return r;
}

/* ------------------------------------------------------------------------ */
/* Listing                                                                    */
/* ------------------------------------------------------------------------ */

static void build_tree(void) {
  mkdir_t("tree");
  write_t("tree/top.jpg", "ignored: not in a class folder");
  mkdir_t("tree/Z_upper"); /* 'Z' < 'a' byte-wise: label 0 */
  write_t("tree/Z_upper/u.jpg", "u");
  mkdir_t("tree/a_class");
  write_t("tree/a_class/img2.jpg", "2");
  write_t("tree/a_class/img10.jpg", "10");
  write_t("tree/a_class/IMG.Webp", "W");
  write_t("tree/a_class/README", "not an image");
  mkdir_t("tree/b_class");
  write_t("tree/b_class/x.JPG", "x");
  write_t("tree/b_class/a.png", "a");
  write_t("tree/b_class/notes.txt", "txt");
  write_t("tree/b_class/sub.jpg", "s"); /* sorts before sub/...: '.' < '/' */
  mkdir_t("tree/b_class/sub");
  write_t("tree/b_class/sub/z.jpeg", "z");
  mkdir_t("tree/b_class/sub/deeper");
  write_t("tree/b_class/sub/deeper/q.Tif", "q");
  mkdir_t("tree/b_class/dir.jpg"); /* a folder with an image suffix: searched, not listed */
  write_t("tree/b_class/dir.jpg/in.png", "i");
  mkdir_t("tree/c_empty"); /* an empty class still takes label 3 */
  mkdir_t("tree/d_class");
  write_t("tree/d_class/only.bmp", "o");
  symlink_t("../a_class/img2.jpg", "tree/d_class/link.jpg"); /* a link to a file: listed */
  symlink_t("nowhere.jpg", "tree/d_class/dead.jpg");         /* dangling: skipped */
  symlink_t("../Z_upper", "tree/d_class/zlink");             /* a link to a folder: followed */
  symlink_t("b_class", "tree/e_link");                       /* a link as a class folder */
}

static void test_tree_listing(void) {
  build_tree();
  const char *expect[][2] = {
      {"Z_upper/u.jpg", "0"},
      {"a_class/IMG.Webp", "1"},
      {"a_class/img10.jpg", "1"},
      {"a_class/img2.jpg", "1"},
      {"b_class/a.png", "2"},
      {"b_class/dir.jpg/in.png", "2"},
      {"b_class/sub.jpg", "2"},
      {"b_class/sub/deeper/q.Tif", "2"},
      {"b_class/sub/z.jpeg", "2"},
      {"b_class/x.JPG", "2"},
      {"d_class/link.jpg", "4"},
      {"d_class/only.bmp", "4"},
      {"d_class/zlink/u.jpg", "4"},
      {"e_link/a.png", "5"},
      {"e_link/dir.jpg/in.png", "5"},
      {"e_link/sub.jpg", "5"},
      {"e_link/sub/deeper/q.Tif", "5"},
      {"e_link/sub/z.jpeg", "5"},
      {"e_link/x.JPG", "5"},
  };
  int n = (int)(sizeof expect / sizeof expect[0]);
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  char root[300];
  snprintf(root, sizeof root, "%s/tree//", tmp_root); /* trailing slashes are dropped */
  p.file_root = root;
  ladle__file_reader *r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (!r) return;
  CHECK(ladle__file_reader_size(r) == n);
  for (int i = 0; i < n && i < ladle__file_reader_size(r); i++) {
    char want[600];
    snprintf(want, sizeof want, "%s/tree/%s", tmp_root, expect[i][0]);
    const char *got = ladle__file_reader_path(r, i);
    if (strcmp(got, want) != 0) fprintf(stderr, "record %d: got %s, want %s\n", i, got, want);
    CHECK(strcmp(got, want) == 0);
    CHECK(ladle__file_reader_label(r, i) == atoi(expect[i][1]));
  }
  CHECK(ladle__file_reader_path(r, n) == NULL);
  /* Reading goes through the link. */
  size_t size = 0;
  CHECK_OK(ladle__file_reader_stat(r, 10, &size));
  CHECK(size == 1);
  uint8_t byte = 0;
  CHECK_OK(ladle__file_reader_read(r, 10, &byte, 1));
  CHECK(byte == '2');
  ladle__file_reader_destroy(r);

  /* Custom patterns, case-insensitive both ways. */
  const char *exts[] = {"*.TXT", "*readme"};
  p.file_filters = (ladle__name_filter){exts, 2, 0};
  r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (r) {
    CHECK(ladle__file_reader_size(r) == 3);
    CHECK(strcmp(ladle__file_reader_path(r, 0), tpath("tree/a_class/README")) == 0);
    CHECK(ladle__file_reader_label(r, 0) == 1);
    CHECK(strcmp(ladle__file_reader_path(r, 1), tpath("tree/b_class/notes.txt")) == 0);
    CHECK(ladle__file_reader_label(r, 1) == 2);
    CHECK(strcmp(ladle__file_reader_path(r, 2), tpath("tree/e_link/notes.txt")) == 0);
    CHECK(ladle__file_reader_label(r, 2) == 5);
  }
  ladle__file_reader_destroy(r);

  /* Name filters themselves: the defaults, suffix patterns, globs, case. */
  ladle__name_filter none = {NULL, 0, 0};
  CHECK(ladle__name_filter_match(&none, "a.JpEg", 1));
  CHECK(!ladle__name_filter_match(&none, "a.jpeg.txt", 1));
  CHECK(!ladle__name_filter_match(&none, "jpg", 1));
  CHECK(ladle__name_filter_match(&none, ".jpg", 1));
  CHECK(ladle__name_filter_match(&none, "any folder", 0)); /* no dir_filters: every folder */
  const char *star[] = {"*"};
  CHECK(ladle__name_filter_match(&(ladle__name_filter){star, 1, 0}, "anything", 1));
  const char *globs[] = {"*.PNG", "*_mask.gif", "x?.[jt]*"};
  ladle__name_filter g = {globs, 3, 0};
  CHECK(ladle__name_filter_match(&g, "a.png", 1));
  CHECK(ladle__name_filter_match(&g, "x_MASK.gif", 1));
  CHECK(!ladle__name_filter_match(&g, "x.gif", 1));
  CHECK(ladle__name_filter_match(&g, "X1.JPG", 1) && ladle__name_filter_match(&g, "x2.tif", 1));
  CHECK(!ladle__name_filter_match(&g, "x12.jpg", 1) && !ladle__name_filter_match(&g, "x1.gif", 1));
  g.case_sensitive = 1;
  CHECK(!ladle__name_filter_match(&g, "a.png", 1) && ladle__name_filter_match(&g, "a.PNG", 1));
  CHECK(!ladle__name_filter_match(&g, "X1.jpg", 1) && ladle__name_filter_match(&g, "x1.jpg", 1));
  CHECK(!ladle__name_filter_match(&(ladle__name_filter){NULL, 0, 1}, "a.JPG", 1)); /* the defaults are lower case */
}

static void expect_create_error(const ladle__file_reader_params *p, const char *needle1,
                                const char *needle2) {
  ladle__file_reader *r = NULL;
  ladle_status st = ladle__file_reader_create(p, &r);
  CHECK(st != LADLE_OK);
  CHECK(r == NULL);
  const char *msg = ladle_last_error();
  if (needle1 && !contains(msg, needle1)) fprintf(stderr, "message lacks '%s': %s\n", needle1, msg);
  if (needle1) CHECK(contains(msg, needle1));
  if (needle2 && !contains(msg, needle2)) fprintf(stderr, "message lacks '%s': %s\n", needle2, msg);
  if (needle2) CHECK(contains(msg, needle2));
  ladle__file_reader_destroy(r);
}

static void test_tree_errors(void) {
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);

  p.file_root = tpath("no_such_root");
  expect_create_error(&p, tpath("no_such_root"), "No such file");

  mkdir_t("flat");
  write_t("flat/a.jpg", "a");
  p.file_root = tpath("flat");
  expect_create_error(&p, tpath("flat"), "subfolder");

  mkdir_t("noimg");
  mkdir_t("noimg/c");
  write_t("noimg/c/a.txt", "a");
  p.file_root = tpath("noimg");
  expect_create_error(&p, tpath("noimg"), ".jpg");

  mkdir_t("loop");
  mkdir_t("loop/c");
  write_t("loop/c/a.jpg", "a");
  symlink_t(".", "loop/c/self");
  p.file_root = tpath("loop");
  expect_create_error(&p, tpath("loop/c/self"), "loop");

  /* Argument checks. */
  ladle__file_reader_params_init(&p);
  expect_create_error(&p, "file_root", NULL);
  p.file_root = tpath("tree");
  p.num_shards = 2;
  p.shard_id = 2;
  expect_create_error(&p, "shard_id", NULL);
  p.shard_id = 0;
  p.batch_size = 0;
  expect_create_error(&p, "batch_size", NULL);
  p.batch_size = 1;
  p.num_shards = 100; /* more shards than the 19 files */
  expect_create_error(&p, "num_shards", "19");
}

static void test_file_list(void) {
  mkdir_t("lists");
  write_t("lists/good.txt",
          "# a comment\n"
          "\n"
          "   \t\n"
          "a/x.jpg 3\n"
          "  b y.jpg   -2 \r\n"
          "/abs/path.png\t7\n"
          "  # indented comment\n"
          "last.jpg +5"); /* no final newline */
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  p.file_list = tpath("lists/good.txt");
  ladle__file_reader *r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (r) {
    CHECK(ladle__file_reader_size(r) == 4);
    CHECK(strcmp(ladle__file_reader_path(r, 0), tpath("lists/a/x.jpg")) == 0);
    CHECK(ladle__file_reader_label(r, 0) == 3);
    CHECK(strcmp(ladle__file_reader_path(r, 1), tpath("lists/b y.jpg")) == 0);
    CHECK(ladle__file_reader_label(r, 1) == -2);
    CHECK(strcmp(ladle__file_reader_path(r, 2), "/abs/path.png") == 0);
    CHECK(ladle__file_reader_label(r, 2) == 7);
    CHECK(strcmp(ladle__file_reader_path(r, 3), tpath("lists/last.jpg")) == 0);
    CHECK(ladle__file_reader_label(r, 3) == 5);
  }
  ladle__file_reader_destroy(r);

  /* Relative to file_root when given. */
  p.file_root = "/data/root/";
  r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (r) {
    CHECK(strcmp(ladle__file_reader_path(r, 0), "/data/root/a/x.jpg") == 0);
    CHECK(strcmp(ladle__file_reader_path(r, 2), "/abs/path.png") == 0);
  }
  ladle__file_reader_destroy(r);
  p.file_root = NULL;

  /* A list in the current folder: paths stay relative. */
  ladle__path_table t = {0};
  char cwd[512];
  CHECK(getcwd(cwd, sizeof cwd) != NULL);
  CHECK(chdir(tpath("lists")) == 0);
  CHECK_OK(ladle__path_table_from_list_file(&t, "good.txt", NULL));
  CHECK(t.count == 4 && strcmp(t.arena + t.offsets[0], "a/x.jpg") == 0);
  CHECK(chdir(cwd) == 0);
  ladle__path_table_free(&t);

  /* Bad lines name the list and the line. */
  struct {
    const char *text, *line, *what;
  } bad[] = {
      {"a.jpg 1\n# c\nnolabel\n", ":3:", "no label"},
      {"a.jpg 1\nb.jpg 1.5\n", ":2:", "1.5"},
      {"a.jpg x1\n", ":1:", "x1"},
      {"\n\na.jpg 99999999999\n", ":3:", "99999999999"},
      {"a.jpg -\n", ":1:", "not an integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_t("lists/bad.txt", bad[i].text);
    p.file_list = tpath("lists/bad.txt");
    char where[600];
    snprintf(where, sizeof where, "%s%s", tpath("lists/bad.txt"), bad[i].line);
    expect_create_error(&p, where, bad[i].what);
  }
  write_t("lists/empty.txt", "# nothing\n\n");
  p.file_list = tpath("lists/empty.txt");
  expect_create_error(&p, tpath("lists/empty.txt"), "no entries");
  p.file_list = tpath("lists/missing.txt");
  expect_create_error(&p, tpath("lists/missing.txt"), "No such file");
  p.file_list = tpath("lists");
  expect_create_error(&p, tpath("lists"), "directory");
}

static void test_files_labels(void) {
  const char *files[] = {"a.jpg", "/abs/b.jpg", "sub/c.png"};
  const int32_t labels[] = {7, -1, 42};
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  p.files = files;
  p.num_files = 3;
  p.labels = labels;
  p.num_labels = 3;
  p.file_root = "/r";
  ladle__file_reader *r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (r) {
    CHECK(ladle__file_reader_size(r) == 3);
    CHECK(strcmp(ladle__file_reader_path(r, 0), "/r/a.jpg") == 0);
    CHECK(strcmp(ladle__file_reader_path(r, 1), "/abs/b.jpg") == 0);
    CHECK(strcmp(ladle__file_reader_path(r, 2), "/r/sub/c.png") == 0);
    for (int i = 0; i < 3; i++) CHECK(ladle__file_reader_label(r, i) == labels[i]);
  }
  ladle__file_reader_destroy(r);

  /* Without labels (and without file_root): label = index, paths as given. */
  p.labels = NULL;
  p.num_labels = 0;
  p.file_root = "";
  r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (r) {
    CHECK(strcmp(ladle__file_reader_path(r, 0), "a.jpg") == 0);
    for (int i = 0; i < 3; i++) CHECK(ladle__file_reader_label(r, i) == i);
  }
  ladle__file_reader_destroy(r);

  p.labels = labels;
  p.num_labels = 2;
  expect_create_error(&p, "labels", "match");
  p.num_labels = 3;
  p.file_list = "/some/list.txt";
  expect_create_error(&p, "file_list", "files");
  p.file_list = NULL;
  const char *with_null[] = {"a.jpg", NULL};
  p.files = with_null;
  p.num_files = 2;
  p.labels = NULL;
  p.num_labels = 0;
  expect_create_error(&p, "files[1]", NULL);
  p.files = NULL;
  p.num_files = 0;
  p.labels = labels;
  p.num_labels = 3;
  p.file_root = "/r";
  expect_create_error(&p, "labels", NULL);
}

/* ------------------------------------------------------------------------ */
/* Shards and shuffles                                                        */
/* ------------------------------------------------------------------------ */

static void test_shard_arithmetic(void) {
  for (int n = 1; n <= 20; n++) {
    for (int S = 1; S <= 5; S++) {
      /* Bounds: a partition of 0..n into S near-equal runs. */
      CHECK(ladle__shard_begin(n, S, 0) == 0);
      CHECK(ladle__shard_begin(n, S, S) == n);
      for (int s = 0; s < S; s++) {
        int64_t b = ladle__shard_begin(n, S, s), e = ladle__shard_begin(n, S, s + 1);
        CHECK(b == (int64_t)s * n / S);
        CHECK(e - b == n / S || e - b == (n + S - 1) / S);
      }
      if (n < S) {
        ladle__file_reader *r = fake_reader(n, 0, 0, 0, S, 0, 0, 1);
        CHECK(r == NULL);
        CHECK(contains(ladle_last_error(), "num_shards"));
        continue;
      }
      for (int shuffle = 0; shuffle <= 1; shuffle++) {
        for (int64_t epoch = 0; epoch < 3; epoch++) {
          /* One epoch, all shards: every record exactly once. Shard s reads
           * shard (s + epoch) % S in epoch `epoch` (rotation), so the union
           * over s covers every shard once. */
          int seen[20] = {0};
          for (int s = 0; s < S; s++) {
            ladle__file_reader *r = fake_reader(n, shuffle, 99, s, S, 0, 0, 1);
            CHECK(r != NULL);
            if (!r) continue;
            /* Find where `epoch` starts in the stream. */
            /* Find where `epoch` starts in the stream (bounded: a broken
             * plan must fail, not hang). */
            int64_t it = 0, limit = 4 * (int64_t)n + 8;
            ladle__sample_ref ref = {0};
            for (; it < limit; it++) {
              ladle__file_reader_plan(r, it, &ref);
              if (ref.epoch == epoch) break;
            }
            CHECK(it < limit);
            for (; it < limit; it++) {
              ladle__file_reader_plan(r, it, &ref);
              if (ref.epoch != epoch) break;
              CHECK(ref.pad == 0);
              CHECK(ref.index >= 0 && ref.index < n);
              if (ref.index >= 0 && ref.index < n) seen[ref.index]++;
            }
            ladle__file_reader_destroy(r);
          }
          for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
        }
      }
    }
  }
}

static void test_shuffle(void) {
  /* A permutation, different per epoch and per seed. */
  for (int n = 1; n <= 64; n += 7) {
    uint32_t a[64], b[64];
    for (int64_t epoch = 0; epoch < 4; epoch++) {
      ladle__sampler_shuffle(n, 1234, epoch, a);
      int seen[64] = {0};
      for (int i = 0; i < n; i++) {
        CHECK(a[i] < (uint32_t)n);
        if (a[i] < (uint32_t)n) seen[a[i]]++;
      }
      for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
      ladle__sampler_shuffle(n, 1234, epoch + 1, b);
      if (n >= 8) CHECK(memcmp(a, b, (size_t)n * sizeof a[0]) != 0);
      ladle__sampler_shuffle(n, 1235, epoch, b);
      if (n >= 8) CHECK(memcmp(a, b, (size_t)n * sizeof a[0]) != 0);
      ladle__sampler_shuffle(n, 1234, epoch, b); /* pure */
      CHECK(memcmp(a, b, (size_t)n * sizeof a[0]) == 0);
    }
  }
  /* Uniform: the 24 orders of 4 records over 24000 epochs. Each count is
   * Binomial(24000, 1/24): mean 1000, sd 31; 6 sd bounds. */
  int counts[256] = {0};
  for (int64_t epoch = 0; epoch < 24000; epoch++) {
    uint32_t p[4];
    ladle__sampler_shuffle(4, 7, epoch, p);
    counts[p[0] * 64 + p[1] * 16 + p[2] * 4 + p[3]]++;
  }
  int distinct = 0;
  for (int i = 0; i < 256; i++) {
    if (!counts[i]) continue;
    distinct++;
    CHECK(counts[i] > 1000 - 190 && counts[i] < 1000 + 190);
  }
  CHECK(distinct == 24);
  /* Fisher-Yates as documented, from the RNG directly. */
  uint32_t got[10], want[10];
  ladle__sampler_shuffle(10, 555, 3, got);
  ladle__rng rng;
  ladle__rng_init(&rng, 555, LADLE__SAMPLER_RNG_OP, 3, 0);
  for (int i = 0; i < 10; i++) want[i] = (uint32_t)i;
  for (int i = 9; i >= 1; i--) {
    int j = (int)ladle__rng_below(&rng, (uint64_t)i + 1);
    uint32_t t = want[i];
    want[i] = want[j];
    want[j] = t;
  }
  CHECK(memcmp(got, want, sizeof got) == 0);

  /* Equal across shards: shard s's samples of epoch 0 (stick_to_shard) are
   * positions [begin(s), end(s)) of the one shuffled order. */
  const int n = 17, S = 4;
  uint32_t order[17];
  ladle__sampler_shuffle(n, 42, 0, order);
  for (int s = 0; s < S; s++) {
    ladle__file_reader *r = fake_reader(n, 1, 42, s, S, 1, 0, 1);
    CHECK(r != NULL);
    if (!r) continue;
    int64_t b = ladle__shard_begin(n, S, s), e = ladle__shard_begin(n, S, s + 1);
    for (int64_t q = b; q < e; q++) {
      ladle__sample_ref ref;
      ladle__file_reader_plan(r, q - b, &ref);
      CHECK(ref.epoch == 0 && ref.position == q - b && ref.index == order[q]);
    }
    ladle__file_reader_destroy(r);
  }
}

/* ------------------------------------------------------------------------ */
/* The stream against a brute-force simulation                                */
/* ------------------------------------------------------------------------ */

/* Builds the stream epoch by epoch, the obvious way, until it holds `need`
 * samples. Returns the number written. */
static int64_t simulate(int n, int shuffle, uint64_t seed, int shard, int S, int stick, int pad,
                        int B, int64_t need, ladle__sample_ref *out) {
  int64_t len = 0;
  uint32_t perm[64];
  for (int64_t e = 0; len < need; e++) {
    if (shuffle)
      ladle__sampler_shuffle(n, seed, e, perm);
    else
      for (int i = 0; i < n; i++) perm[i] = (uint32_t)i;
    int sh = stick ? shard : (int)((shard + e) % S);
    int64_t b = (int64_t)sh * n / S, end = (int64_t)(sh + 1) * n / S;
    for (int64_t q = b; q < end && len < need; q++)
      out[len++] = (ladle__sample_ref){perm[q], e, q - b, 0};
    if (pad) {
      int64_t m = (n + S - 1) / S, total = (m + B - 1) / B * B;
      for (int64_t q = end - b; q < total && len < need; q++)
        out[len++] = (ladle__sample_ref){perm[end - 1], e, q, 1};
    }
  }
  return len;
}

static void test_stream_vs_simulation(void) {
  static ladle__sample_ref sim[8192], got[64];
  const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 50};
  const int bs[] = {1, 2, 3, 5, 7, 16};
  int combos = 0, mismatches = 0;
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
    int n = ns[ni];
    for (int S = 1; S <= 5 && S <= n; S++) {
      for (size_t bi = 0; bi < sizeof bs / sizeof bs[0]; bi++) {
        int B = bs[bi];
        for (int shard = 0; shard < S; shard++) {
          for (int flags = 0; flags < 8; flags++) {
            int stick = flags & 1, pad = (flags >> 1) & 1, shuffle = (flags >> 2) & 1;
            uint64_t seed = 1000 + (uint64_t)combos;
            ladle__file_reader *r = fake_reader(n, shuffle, seed, shard, S, stick, pad, B);
            CHECK(r != NULL);
            if (!r) continue;
            combos++;
            /* Iterations spanning several epochs (and whole rotations). */
            int64_t iters = (int64_t)(3 * S + 2) * ((n + S - 1) / S + B) / B + 2;
            if (iters * B > 8192) iters = 8192 / B;
            int64_t have = simulate(n, shuffle, seed, shard, S, stick, pad, B, iters * B, sim);
            CHECK(have == iters * B);
            if (pad)
              CHECK(ladle__file_reader_batches_per_epoch(r) == ((n + S - 1) / S + B - 1) / B);
            /* Visit the iterations out of order: the plan must not depend on
             * what was asked before (the shuffle cache). */
            for (int64_t j = 0; j < iters; j++) {
              int64_t k = (j * 7919) % iters;
              ladle__file_reader_plan(r, k, got);
              for (int i = 0; i < B; i++) {
                const ladle__sample_ref *a = &got[i], *w = &sim[k * B + i];
                if (a->index != w->index || a->epoch != w->epoch || a->position != w->position ||
                    a->pad != w->pad) {
                  if (mismatches++ < 5)
                    fprintf(stderr,
                            "n=%d S=%d B=%d shard=%d stick=%d pad=%d shuffle=%d it=%lld i=%d: "
                            "got (%lld e%lld p%lld pad%d) want (%lld e%lld p%lld pad%d)\n",
                            n, S, B, shard, stick, pad, shuffle, (long long)k, i,
                            (long long)a->index, (long long)a->epoch, (long long)a->position,
                            a->pad, (long long)w->index, (long long)w->epoch,
                            (long long)w->position, w->pad);
                }
              }
            }
            ladle__file_reader_destroy(r);
          }
        }
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(combos > 3000);
}

/* Far iterations: without shuffle the stream repeats every N samples, shifted
 * by S epochs (stick: by 1 epoch every shard-size samples). */
static void test_far_iterations(void) {
  const int n = 10, S = 3, B = 4;
  for (int stick = 0; stick <= 1; stick++) {
    for (int shard = 0; shard < S; shard++) {
      ladle__file_reader *r = fake_reader(n, 0, 0, shard, S, stick, 0, B);
      CHECK(r != NULL);
      if (!r) continue;
      int64_t len = stick ? ladle__shard_begin(n, S, shard + 1) - ladle__shard_begin(n, S, shard)
                          : n;
      int64_t epochs_per_period = stick ? 1 : S;
      for (int64_t k = 0; k < 12; k++) {
        int64_t m = 123456789; /* periods skipped: m*len*B samples = m*len batches */
        ladle__sample_ref a[4], b[4];
        ladle__file_reader_plan(r, k, a);
        ladle__file_reader_plan(r, k + m * len, b);
        for (int i = 0; i < B; i++) {
          CHECK(b[i].index == a[i].index);
          CHECK(b[i].position == a[i].position);
          CHECK(b[i].epoch == a[i].epoch + m * B * epochs_per_period);
        }
      }
      ladle__file_reader_destroy(r);
    }
  }
  /* With padding, batch k is in epoch k / batches_per_epoch. */
  ladle__file_reader *r = fake_reader(10, 1, 5, 2, 3, 0, 1, 4);
  if (r) {
    ladle__sample_ref a[4];
    int64_t k = 5000000001ll;
    ladle__file_reader_plan(r, k, a);
    CHECK(ladle__file_reader_batches_per_epoch(r) == 1);
    int sh = (int)((2 + k % 3) % 3);
    int64_t size = sh == 2 ? 4 : 3; /* shard sizes of 10 over 3: 3, 3, 4 */
    CHECK(a[0].epoch == k && a[0].position == 0 && a[3].epoch == k);
    CHECK(a[3].position == 3 && a[3].pad == (size < 4));
  }
  ladle__file_reader_destroy(r);
}

typedef struct plan_job {
  ladle__file_reader *r;
  const ladle__sample_ref *want;
  int64_t iters;
  int B, seed, bad;
} plan_job;

static void *plan_worker(void *arg) {
  plan_job *j = arg;
  uint64_t x = (uint64_t)j->seed;
  ladle__sample_ref got[8];
  for (int t = 0; t < 4000; t++) {
    x = ladle__splitmix64(x);
    int64_t k = (int64_t)(x % (uint64_t)j->iters);
    ladle__file_reader_plan(j->r, k, got);
    for (int i = 0; i < j->B; i++) {
      const ladle__sample_ref *w = &j->want[k * j->B + i];
      if (got[i].index != w->index || got[i].epoch != w->epoch) j->bad++;
    }
  }
  return NULL;
}

/* plan() from several threads at once gives what one thread gets. */
static void test_plan_threads(void) {
  const int n = 50, S = 3, B = 8;
  static ladle__sample_ref want[8 * 200];
  ladle__file_reader *r = fake_reader(n, 1, 77, 1, S, 0, 0, B);
  CHECK(r != NULL);
  if (!r) return;
  int64_t iters = 200;
  simulate(n, 1, 77, 1, S, 0, 0, B, iters * B, want);
  pthread_t th[4];
  plan_job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (plan_job){r, want, iters, B, i + 1, 0};
    pthread_create(&th[i], NULL, plan_worker, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].bad == 0);
  }
  ladle__file_reader_destroy(r);
}

static void test_meta(void) {
  struct {
    int n, S, shard, stick, pad, B;
    int64_t padded, batches;
  } cases[] = {
      {10, 3, 1, 0, 1, 3, 12, 2},  {10, 3, 2, 1, 0, 3, 10, 0}, {9, 3, 0, 0, 1, 4, 9, 1},
      {7, 1, 0, 0, 1, 2, 7, 4},    {50, 4, 3, 1, 1, 5, 52, 3}, {1, 1, 0, 0, 1, 16, 1, 1},
      {20, 5, 4, 0, 0, 1, 20, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ladle__file_reader *r = fake_reader(cases[i].n, 0, 0, cases[i].shard, cases[i].S,
                                        cases[i].stick, cases[i].pad, cases[i].B);
    CHECK(r != NULL);
    if (!r) continue;
    ladle_reader_meta m;
    CHECK_OK(ladle__file_reader_meta(r, &m));
    CHECK(m.epoch_size == cases[i].n);
    CHECK(m.epoch_size_padded == cases[i].padded);
    CHECK(m.number_of_shards == cases[i].S);
    CHECK(m.shard_id == cases[i].shard);
    CHECK(m.stick_to_shard == cases[i].stick);
    CHECK(m.pad_last_batch == cases[i].pad);
    CHECK(ladle__file_reader_batches_per_epoch(r) == cases[i].batches);
    /* DALI's iterator formula gives the same batch count. */
    if (cases[i].pad)
      CHECK((m.epoch_size_padded / m.number_of_shards + cases[i].B - 1) / cases[i].B ==
            cases[i].batches);
    ladle__file_reader_destroy(r);
  }
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */
/* ------------------------------------------------------------------------ */

static void expect_error_names(ladle_status st, const char *path, const char *what) {
  CHECK(st == LADLE_ERROR_IO);
  const char *msg = ladle_last_error();
  if (!contains(msg, path) || (what && !contains(msg, what)))
    fprintf(stderr, "message lacks '%s' or '%s': %s\n", path, what ? what : "", msg);
  CHECK(contains(msg, path));
  if (what) CHECK(contains(msg, what));
}

static void test_read(void) {
  mkdir_t("read");
  write_t("read/hello.jpg", "hello world");
  write_t("read/empty.jpg", "");
  write_t("read/shrinks.jpg", "0123456789");
  write_t("read/grows.jpg", "0123456789");
  mkdir_t("read/folder.jpg");
  mkfifo(tpath("read/fifo.jpg"), 0644);
  write_t("read/locked.jpg", "secret");
  chmod(tpath("read/locked.jpg"), 0);
  const char *files[] = {"hello.jpg", "empty.jpg", "missing.jpg", "folder.jpg",
                         "shrinks.jpg", "grows.jpg", "fifo.jpg", "locked.jpg"};
  ladle__file_reader_params p;
  ladle__file_reader_params_init(&p);
  p.files = files;
  p.num_files = 8;
  char root[512];
  snprintf(root, sizeof root, "%s", tpath("read"));
  p.file_root = root;
  ladle__file_reader *r = NULL;
  CHECK_OK(ladle__file_reader_create(&p, &r));
  if (!r) return;

  size_t size = 99;
  uint8_t buf[64];
  CHECK_OK(ladle__file_reader_stat(r, 0, &size));
  CHECK(size == 11);
  CHECK_OK(ladle__file_reader_read(r, 0, buf, size));
  CHECK(memcmp(buf, "hello world", 11) == 0);

  /* Zero bytes: not an error here. */
  CHECK_OK(ladle__file_reader_stat(r, 1, &size));
  CHECK(size == 0);
  CHECK_OK(ladle__file_reader_read(r, 1, NULL, 0));

  expect_error_names(ladle__file_reader_stat(r, 2, &size), tpath("read/missing.jpg"),
                     "No such file");
  CHECK(contains(ladle_last_error(), "record 2"));
  expect_error_names(ladle__file_reader_read(r, 2, buf, 3), tpath("read/missing.jpg"),
                     "No such file");
  expect_error_names(ladle__file_reader_stat(r, 3, &size), tpath("read/folder.jpg"),
                     "directory");
  expect_error_names(ladle__file_reader_read(r, 3, buf, 3), tpath("read/folder.jpg"),
                     "directory");
  expect_error_names(ladle__file_reader_stat(r, 6, &size), tpath("read/fifo.jpg"),
                     "not a regular file");
  expect_error_names(ladle__file_reader_read(r, 6, buf, 3), tpath("read/fifo.jpg"),
                     "not a regular file");

  /* Truncated, then grown, between stat and read. */
  CHECK_OK(ladle__file_reader_stat(r, 4, &size));
  CHECK(size == 10);
  CHECK(truncate(tpath("read/shrinks.jpg"), 4) == 0);
  expect_error_names(ladle__file_reader_read(r, 4, buf, size), tpath("read/shrinks.jpg"),
                     "changed size");
  CHECK_OK(ladle__file_reader_stat(r, 5, &size));
  write_t("read/grows.jpg", "0123456789abc");
  expect_error_names(ladle__file_reader_read(r, 5, buf, size), tpath("read/grows.jpg"),
                     "changed size");

  /* Permissions mean nothing to root. */
  if (geteuid() != 0) {
    expect_error_names(ladle__file_reader_read(r, 7, buf, 6), tpath("read/locked.jpg"),
                       "Permission denied");
  } else {
    fprintf(stderr, "     (running as root: the permission case is not checked)\n");
  }

  CHECK(ladle__file_reader_stat(r, 8, &size) == LADLE_ERROR_INVALID_ARGUMENT);
  CHECK(ladle__file_reader_read(r, -1, buf, 1) == LADLE_ERROR_INVALID_ARGUMENT);
  ladle__file_reader_destroy(r);
}

int main(void) {
  make_tmp_root();
  RUN(test_tree_listing);
  RUN(test_tree_errors);
  RUN(test_file_list);
  RUN(test_files_labels);
  RUN(test_shard_arithmetic);
  RUN(test_shuffle);
  RUN(test_stream_vs_simulation);
  RUN(test_far_iterations);
  RUN(test_plan_threads);
  RUN(test_meta);
  RUN(test_read);
  remove_tmp_root();
  TEST_MAIN_END();
}
