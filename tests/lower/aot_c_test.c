/* The seed and MLP models exported by `kiln aot`, called from C (C99, not C++), against
 * kiln's eager outputs (written by aot_reference.cpp). The MLP's weights come from the
 * exported mlp.weights through the generated loader, so this also checks that file.
 * Usage: kiln_aot_c_test REF_DIR MLP_WEIGHTS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "mlp_weights.h"
#include "seed.h"

enum { kMaxRank = 4 };

/* A dense f32 tensor read from a .ref file, with the halide_buffer_t that views it. */
typedef struct tensor {
  int rank;
  int64_t sizes[kMaxRank]; /* outermost first */
  int64_t numel;
  float *data;
  halide_dimension_t dims[kMaxRank]; /* innermost first */
  struct halide_buffer_t buf;
} tensor;

static void make_buffer(tensor *t) {
  int j;
  int32_t stride = 1;
  memset(&t->buf, 0, sizeof t->buf);
  for (j = 0; j < t->rank; ++j) {
    halide_dimension_t *d = &t->dims[j];
    d->min = 0;
    d->extent = (int32_t)t->sizes[t->rank - 1 - j];
    d->stride = stride;
    d->flags = 0;
    stride *= d->extent;
  }
  t->buf.host = (uint8_t *)t->data;
  t->buf.type.code = halide_type_float;
  t->buf.type.bits = 32;
  t->buf.type.lanes = 1;
  t->buf.dimensions = t->rank;
  t->buf.dim = t->dims;
}

static int read_tensor(FILE *f, tensor *t) {
  int32_t rank;
  int j;
  if (fread(&rank, sizeof rank, 1, f) != 1 || rank < 0 || rank > kMaxRank) return -1;
  t->rank = rank;
  t->numel = 1;
  for (j = 0; j < rank; ++j) {
    if (fread(&t->sizes[j], sizeof t->sizes[j], 1, f) != 1) return -1;
    t->numel *= t->sizes[j];
  }
  t->data = (float *)malloc((size_t)t->numel * sizeof(float));
  if (!t->data || fread(t->data, sizeof(float), (size_t)t->numel, f) != (size_t)t->numel) return -1;
  make_buffer(t);
  return 0;
}

/* An uninitialized tensor of the same shape, for an output (filled in place: the
 * buffer points at the tensor's own dims). */
static void empty_like(const tensor *t, tensor *out) {
  *out = *t;
  out->data = (float *)malloc((size_t)t->numel * sizeof(float));
  make_buffer(out);
}

/* Halide's default handler prints and aborts; this one prints, and the entry point
 * returns the error code. */
static void print_error(void *user_context, const char *msg) {
  (void)user_context;
  fprintf(stderr, "halide error: %s\n", msg);
}

/* Reads <dir>/<model>.ref: the input, then the eager output. */
static int read_reference(const char *dir, const char *model, tensor *input, tensor *expected) {
  char path[4096];
  FILE *f;
  int ok;
  snprintf(path, sizeof path, "%s/%s.ref", dir, model);
  f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  ok = read_tensor(f, input) == 0 && read_tensor(f, expected) == 0;
  fclose(f);
  if (!ok) fprintf(stderr, "%s is not a reference file\n", path);
  return ok ? 0 : -1;
}

/* allclose(got, want, rtol, atol), as kiln's; prints the worst element. */
static int check_close(const char *what, const tensor *got, const tensor *want, double rtol, double atol) {
  int64_t i, worst = 0, bad = 0;
  double worst_err = 0;
  for (i = 0; i < want->numel; ++i) {
    double g = got->data[i], w = want->data[i], err = fabs(g - w);
    if (!(err <= atol + rtol * fabs(w))) ++bad;
    if (!(err <= worst_err)) {
      worst_err = err;
      worst = i;
    }
  }
  printf("%s: %lld elements, max abs error %.3g at %lld (got %.9g, eager %.9g)\n", what, (long long)want->numel,
         worst_err, (long long)worst, got->data[worst], want->data[worst]);
  if (bad) fprintf(stderr, "%s: %lld elements differ from eager\n", what, (long long)bad);
  return bad == 0;
}

int main(int argc, char **argv) {
  tensor seed_x, seed_want, seed_out, mlp_x, mlp_want, mlp_out;
  mlp_weights w;
  int ok = 1, err;
  if (argc != 3) {
    fprintf(stderr, "usage: %s REF_DIR MLP_WEIGHTS\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  halide_set_error_handler(print_error);
  if (read_reference(argv[1], "seed", &seed_x, &seed_want) != 0) return 1;
  if (read_reference(argv[1], "mlp", &mlp_x, &mlp_want) != 0) return 1;

  empty_like(&seed_want, &seed_out);
  err = seed(&seed_x.buf, &seed_out.buf);
  if (err != 0) fprintf(stderr, "seed returned %d\n", err);
  ok = err == 0 && check_close("seed", &seed_out, &seed_want, 1e-4, 1e-5) && ok;

  if (mlp_weights_load(&w, argv[2]) != 0) return 1;
  empty_like(&mlp_want, &mlp_out);
  err = mlp_run(&w, &mlp_x.buf, &mlp_out.buf);
  if (err != 0) fprintf(stderr, "mlp returned %d\n", err);
  ok = err == 0 && check_close("mlp", &mlp_out, &mlp_want, 1e-4, 1e-5) && ok;

  /* Bad input is an error code, not a crash: an input one row short. */
  mlp_x.dims[1].extent -= 1;
  err = mlp_run(&w, &mlp_x.buf, &mlp_out.buf);
  printf("mlp with a %d-row input returned %d (an error is expected)\n", mlp_x.dims[1].extent, err);
  ok = err != 0 && ok;
  mlp_weights_free(&w);

  /* The loader refuses a file that is not mlp's weights. */
  ok = mlp_weights_load(&w, "/nonexistent/mlp.weights") != 0 && ok;
  {
    char ref[4096];
    snprintf(ref, sizeof ref, "%s/seed.ref", argv[1]);
    ok = mlp_weights_load(&w, ref) != 0 && ok;
  }
  /* ... and a truncated one (its loader says so, naming the weight that ends past it). */
  {
    char cut[4096];
    FILE *in = fopen(argv[2], "rb"), *out;
    long n;
    unsigned char *bytes;
    snprintf(cut, sizeof cut, "%s/truncated.weights", argv[1]);
    if (!in || fseek(in, 0, SEEK_END) != 0 || (n = ftell(in)) < 64 || fseek(in, 0, SEEK_SET) != 0) return 1;
    bytes = (unsigned char *)malloc((size_t)n);
    if (!bytes || fread(bytes, 1, (size_t)n, in) != (size_t)n) return 1;
    fclose(in);
    out = fopen(cut, "wb");
    if (!out || fwrite(bytes, 1, (size_t)(n - 16), out) != (size_t)(n - 16)) return 1;
    fclose(out);
    free(bytes);
    ok = mlp_weights_load(&w, cut) != 0 && ok;
  }

  free(seed_x.data);
  free(seed_want.data);
  free(seed_out.data);
  free(mlp_x.data);
  free(mlp_want.data);
  free(mlp_out.data);
  printf("kiln_aot_c_test: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
