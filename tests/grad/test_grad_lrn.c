/* Checks of src/ops/lrn.c (LRN, ONNX since-versions 1 and 13).
 *
 * - Finite-difference gradient checks (gradcheck.h) in double (tolerance 1e-6)
 *   and float (h = 1e-2, tolerance 2e-2): odd and even sizes (the even window
 *   is asymmetric), size 1, a size wider than the channel count, several
 *   alpha / beta / bias, 2-D, 3-D and 4-D inputs, and a 4-D input with more
 *   spatial positions than one tile of lrn.c (LRN_TILE = 128).
 * - Forward against a direct evaluation of the ONNX formula (window summed
 *   element by element), including float16 and bfloat16 inputs.
 * - The backward contract: a dX buffer pre-filled with 0.25 ends at the
 *   gradient + 0.25 (ACCUMULATE), double and float.
 * - A PyTorch golden (torch.nn.LocalResponseNorm, Debian python3-torch 1.13):
 *   Y and dX of L = sum(w * Y) for a [2,5,2,2] input and four settings. torch's
 *   window for an even size is [c - size/2, c + size/2 - 1], the mirror of
 *   ONNX's, so the even-size golden was taken on the channel-flipped input and
 *   flipped back. Generator: the script at the end of this file. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) {
  switch (dt) {
  case AMD_DOUBLE:
    return "double";
  case AMD_FLOAT:
    return "float";
  case AMD_FLOAT16:
    return "float16";
  default:
    return "bfloat16";
  }
}

static void check(int ok, const char *fmt, const char *label, double v) {
  printf(ok ? "ok   " : "FAIL ");
  printf(fmt, label, v);
  printf("\n");
  if (ok)
    gc_passed++;
  else
    gc_failed++;
}

/* The node's attributes: size always, the others when >= 0 (else the ONNX default). */
static int lrn_attrs(Onnx__AttributeProto **a, int64_t size, double alpha, double beta, double bias) {
  int n = 0;
  a[n++] = gc_attr_int("size", size);
  if (alpha >= 0) a[n++] = gc_attr_float("alpha", (float)alpha);
  if (beta >= 0) a[n++] = gc_attr_float("beta", (float)beta);
  if (bias >= 0) a[n++] = gc_attr_float("bias", (float)bias);
  return n;
}

/* y = LRN(x) straight from the ONNX definition, in double; alpha, beta, bias
 * as the node sees them (float attributes). */
static void lrn_ref(const amd_tensor *x, int64_t size, double alpha, double beta, double bias, double *y) {
  int64_t ch = x->dims[1], inner = 1, batch = x->dims[0];
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo; /* floor, ceil of (size - 1) / 2 */
  for (int64_t b = 0; b < batch; b++)
    for (int64_t c = 0; c < ch; c++)
      for (int64_t p = 0; p < inner; p++) {
        double sum = 0;
        for (int64_t j = c - lo; j <= c + hi; j++) {
          if (j < 0 || j >= ch) continue;
          double v = amd_tensor_get_f64(x, (b * ch + j) * inner + p);
          sum += v * v;
        }
        int64_t i = (b * ch + c) * inner + p;
        y[i] = amd_tensor_get_f64(x, i) / pow(bias + alpha / (double)size * sum, beta);
      }
}

/* ---- gradient checks ---- */

static void check_grad(amd_dtype dt, int rank, const int64_t *dims, int64_t size, double alpha, double beta,
                       double bias) {
  Onnx__AttributeProto *a[4];
  int na = lrn_attrs(a, size, alpha, beta, bias);
  amd_tensor x = gc_tensor(dt, rank, dims, -2, 2), *in[] = {&x};
  char label[160], shape[64];
  amd_shape_str(&x, shape, sizeof shape);
  if (alpha < 0)
    snprintf(label, sizeof label, "LRN-13 %s size=%lld default alpha, beta, bias %s", shape, (long long)size,
             dt_name(dt));
  else
    snprintf(label, sizeof label, "LRN-13 %s size=%lld alpha=%g beta=%g bias=%g %s", shape, (long long)size,
             alpha, beta, bias, dt_name(dt));
  gradcheck(label, "LRN", 13, a, na, in, 1, 1, 1u, tol_for(dt));
  amd_tensor_free(&x);
  gc_attrs_free(a, na);
}

static void test_grad(amd_dtype dt) {
  int64_t d4[] = {2, 5, 3, 4}, d3[] = {2, 6, 7}, d2[] = {3, 4}, dbig[] = {1, 4, 13, 11};
  check_grad(dt, 4, d4, 3, 0.5, 0.75, 1.0);
  check_grad(dt, 4, d4, 4, 0.5, 0.75, 1.0);
  check_grad(dt, 4, d4, 3, 1.0, 0.6, 2.0);
  check_grad(dt, 4, d4, 4, 0.2, 1.5, 0.8);
  check_grad(dt, 4, d4, 5, 2.0, 0.3, 0.5);
  check_grad(dt, 4, d4, 1, 1.0, 0.75, 1.0);
  check_grad(dt, 4, d4, 8, 0.7, 0.75, 1.0); /* wider than C = 5 */
  check_grad(dt, 4, d4, 3, -1, -1, -1);     /* ONNX defaults: alpha 1e-4, beta 0.75, bias 1 */
  check_grad(dt, 3, d3, 3, 0.5, 0.75, 1.0);
  check_grad(dt, 3, d3, 4, 1.0, 0.9, 1.5);
  check_grad(dt, 2, d2, 4, 1.0, 0.75, 1.0);
  check_grad(dt, 4, dbig, 4, 0.8, 0.75, 1.0); /* 143 positions: two tiles */
}

/* ---- forward against the definition ---- */

static void check_forward(amd_dtype dt, int rank, const int64_t *dims, int64_t size, double alpha,
                          double beta, double bias) {
  Onnx__AttributeProto *a[4];
  int na = lrn_attrs(a, size, alpha, beta, bias);
  amd_tensor x = gc_tensor(dt, rank, dims, -3, 3), out[8], *in[] = {&x};
  amd_status st = {{0}};
  gc_node g;
  char label[160], shape[64];
  amd_shape_str(&x, shape, sizeof shape);
  snprintf(label, sizeof label, "LRN-13 forward %s size=%lld %s", shape, (long long)size, dt_name(dt));
  if (gc_bind(&g, "LRN", 13, a, na, in, 1, 1, &st) || gc_forward(&g.node, in, out, NULL, NULL, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
  } else {
    int64_t n = amd_tensor_numel(&x);
    double *y = malloc((size_t)n * sizeof *y), worst = 0;
    lrn_ref(&x, size, (float)alpha, (float)beta, (float)bias, y);
    for (int64_t i = 0; i < n; i++) {
      double e = fabs(amd_tensor_get_f64(&out[0], i) - y[i]) / (1 + fabs(y[i]));
      if (e > worst || e != e) worst = e;
    }
    double tol = dt == AMD_DOUBLE ? 1e-13 : dt == AMD_FLOAT ? 1e-6 : 1e-2;
    check(worst <= tol, "%s: max rel diff from the definition %.2e", label, worst);
    free(y);
    gc_free_outs(out, 1);
    free(g.node.attrs);
  }
  amd_tensor_free(&x);
  gc_attrs_free(a, na);
}

static void test_forward(void) {
  int64_t d4[] = {2, 7, 3, 5}, d3[] = {3, 6, 9}, dbig[] = {2, 5, 17, 19};
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int t = 0; t < ARRAY_LEN(dts); t++) {
    for (int64_t size = 1; size <= 6; size++) check_forward(dts[t], 4, d4, size, 0.9, 0.75, 1.0);
    check_forward(dts[t], 4, d4, 15, 0.9, 0.75, 1.0); /* window covers every channel */
    check_forward(dts[t], 3, d3, 4, 0.3, 1.2, 0.7);
    check_forward(dts[t], 4, dbig, 5, 0.9, 0.75, 1.0); /* 323 positions: three tiles */
  }
  check_forward(AMD_FLOAT16, 4, d4, 4, 0.9, 0.75, 1.0);
  check_forward(AMD_BFLOAT16, 4, d4, 3, 0.9, 0.75, 1.0);
}

/* ---- accumulation ---- */

static void check_accumulates(amd_dtype dt, int64_t size) {
  int64_t dims[] = {2, 5, 3, 4};
  Onnx__AttributeProto *a[4];
  int na = lrn_attrs(a, size, 0.6, 0.75, 1.0);
  amd_tensor x = gc_tensor(dt, 4, dims, -2, 2), out[8], *in[] = {&x};
  amd_tensor w = gc_tensor(dt, 4, dims, -1, 1), g0 = {0}, g1 = {0};
  amd_status st = {{0}};
  gc_node g;
  char label[96];
  snprintf(label, sizeof label, "LRN-13 size=%lld %s", (long long)size, dt_name(dt));
  amd_tensor_set_shape(&g0, dt, 4, dims);
  amd_tensor_set_shape(&g1, dt, 4, dims);
  AMD_ASSERT(amd_tensor_alloc(&g0, &st) == 0 && amd_tensor_alloc(&g1, &st) == 0);
  for (int64_t i = 0; i < amd_tensor_numel(&g1); i++) amd_tensor_set_f64(&g1, i, 0.25);
  int ok =
      gc_bind(&g, "LRN", 13, a, na, in, 1, 1, &st) == 0 && gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
  if (ok) {
    const amd_tensor *dout[8] = {&w};
    amd_tensor *d0[8] = {&g0}, *d1[8] = {&g1};
    amd_ctx ctx = {.training = 1};
    ok = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, d0, &st) == 0 &&
         g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, d1, &st) == 0;
    gc_free_outs(out, 1);
    free(g.node.attrs);
  }
  if (!ok) {
    printf("FAIL %s: %s\n", label, st.msg);
    gc_failed++;
  } else {
    double worst = 0;
    for (int64_t i = 0; i < amd_tensor_numel(&g0); i++) {
      double want = amd_tensor_get_f64(&g0, i) + 0.25, e = fabs(amd_tensor_get_f64(&g1, i) - want);
      if (e > worst || e != e) worst = e;
    }
    check(worst <= (dt == AMD_DOUBLE ? 1e-12 : 1e-6), "%s: accumulates onto 0.25 (max diff %.2e)", label,
          worst);
  }
  amd_tensor_free(&x);
  amd_tensor_free(&w);
  amd_tensor_free(&g0);
  amd_tensor_free(&g1);
  gc_attrs_free(a, na);
}

/* ---- PyTorch golden ---- */

static const double lrn_gold_x[40] = {
    1.1336727142333984,   0.28512808680534363,  -1.5583393573760986,  -1.2302078008651733,
    0.51045310497283936,  -0.62100100517272949, 0.40055420994758606,  -1.9376499652862549,
    -0.24912476539611816, 0.98555934429168701,  -0.51975792646408081, 1.4182428121566772,
    -0.74346464872360229, 1.7724968194961548,   -1.5642585754394531,  0.54380863904953003,
    -1.8973627090454102,  -0.17787575721740723, 0.27699097990989685,  -1.5817065238952637,
    1.1023451089859009,   1.6754888296127319,   1.3939920663833618,   0.89547383785247803,
    -0.83622086048126221, -0.68463796377182007, -1.3428117036819458,  -0.78010845184326172,
    0.021523807197809219, 1.0674231052398682,   1.3729788064956665,   -0.99859756231307983,
    -1.1847943067550659,  1.9997705221176147,   0.6816449761390686,   0.89881736040115356,
    0.84284234046936035,  -0.96607846021652222, 0.2498704195022583,   -1.5476770401000977};
static const struct {
  int64_t size;
  double alpha, beta, bias, y[40], dx[40];
} lrn_gold[] = {
    {3,
     0.10000000149011612,
     0.75,
     1.0,
     {1.0917487953186928,   0.28184433501557488,  -1.4645393712443147,  -1.0896442441602456,
      0.49085213431820557,  -0.59956916598691801, 0.37412036585389158,  -1.646324171516365,
      -0.24380845712207419, 0.88750648765918927,  -0.48525274744155811, 1.2353998252053762,
      -0.67366017308040615, 1.6085472211810854,   -1.4632074504972175,  0.48642846504993298,
      -1.7215604657008934,  -0.16495495401754062, 0.26070977788144156,  -1.4794015144780077,
      1.0523693731004362,   1.5501874596472107,   1.2762362282060267,   0.86514380228292975,
      -0.79830139841972003, -0.61764289895900781, -1.1802693726425493,  -0.73622468119656159,
      0.020457195248297259, 0.93869421358548211,  1.2457604049894531,   -0.94229220758442889,
      -1.1257894473602728,  1.7415879290516842,   0.64323303394711673,  0.8146841207575336,
      0.80087596082675827,  -0.86185085513267057, 0.24662772144378525,  -1.4342886156113115},
     {-0.9094490760600511,  0.38891670249008481,  -0.31261295063572425, 0.82872685882577779,
      0.21160402518352783,  -0.55080893865221126, 0.72915869155296975,  -0.1893691149550687,
      -0.78234978082681617, 0.52842873204782881,  -0.21210606554681682, -0.80414417941969418,
      0.39443444209578071,  -0.34336283196391254, 0.83763406408994956,  0.17512627429670438,
      -0.48074328373625375, 0.73579922185365787,  0.018538361803902014, -0.65600948381043434,
      0.52353986125740504,  -0.11652256221103574, -0.8225956247876669,  0.35334458842587246,
      -0.34385528158566431, 0.87414645469016283,  0.027495614104063704, -0.55781652689977901,
      0.75979016468180838,  0.10603975886622828,  -0.6684807712305505,  0.54618695215351942,
      -0.1323532584324357,  -0.71126550573431957, 0.40413548337198912,  -0.27960359438599058,
      0.90981589831760246,  0.10130691826769064,  -0.59337193159992574, 0.63904223334179366}},
    {5,
     0.5,
     0.6000000238418579,
     2.0,
     {0.7140372696773758,   0.1804372422257928,   -0.94891549849949108, -0.67371842571703933,
      0.31667018761846466,  -0.3620287280865378,  0.22947111656931321,  -1.0543034603899899,
      -0.14120291740374497, 0.57411422611231111,  -0.29722067250405809, 0.73250619628670466,
      -0.43453319841140592, 1.0345778200429008,   -0.95014743915580047, 0.2897076324303936,
      -1.1160970183597401,  -0.10481502331712798, 0.16895686355156833,  -0.91698242679962982,
      0.68845245762098517,  0.98071629545378247,  0.79249514659795905,  0.5518426038850579,
      -0.50315194948459929, -0.36587881662589011, -0.75521405590186541, -0.47063910668855058,
      0.0127197188704755,   0.55948892021479601,  0.77107405630015691,  -0.56798443779062957,
      -0.72231030076156844, 1.1133573599397717,   0.4009631242169675,   0.52108249542767682,
      0.52352698394200925,  -0.54363819440975392, 0.15396598081554522,  -0.91072463528300351},
     {-0.59474271907338372,  0.24416707973142338,   -0.1945750961780657,  0.47523372230917321,
      0.14422917486311818,   -0.34283308173384947,  0.46560962455101385,  -0.10933699385736569,
      -0.45500594046965454,  0.34258900277267662,   -0.12384444079174475, -0.48678443556572654,
      0.2585870024902881,    -0.23877029728575386,  0.54772439990232535,  0.10182077920779047,
      -0.29616084363144085,  0.47005304374924134,   0.012980205464461183, -0.45004555463748502,
      0.33780980521394954,   -0.075024738350528253, -0.46765772472758205, 0.23714568703279884,
      -0.2063248661284719,   0.48276894765877504,   0.026007898410703507, -0.36169282741037578,
      0.4712726600092515,    0.08585894902430867,   -0.35407697203345811, 0.30555986057142531,
      -0.066396438767033258, -0.41516798440168967,  0.25726887692566452,  -0.18913055775098647,
      0.59036832783846083,   0.059079078418763503,  -0.36338921709078287, 0.37452700778457637}},
    {4,
     0.30000001192092896,
     0.8999999761581421,
     1.5,
     {0.73414585785422615,  0.18595769307945684,  -0.95930160194663538, -0.64591189311471386,
      0.32313032928367025,  -0.35810738769681244, 0.22501230766814995,  -1.0075246200188466,
      -0.14421344184521634, 0.5693695124401098,   -0.3187643077149766,  0.71444076235656628,
      -0.4345428255509779,  1.0387008924947565,   -0.9654254475522992,  0.31098800868473608,
      -1.1115415596357354,  -0.10816110193424321, 0.17279690778549597,  -0.97604955996757736,
      0.70485051447851299,  0.97205133083274997,  0.77412242190569314,  0.5612305037248998,
      -0.5056303341805759,  -0.34651360621694938, -0.73374037750054222, -0.47358659888133969,
      0.013273493671298382, 0.57446439136761185,  0.80246852308760308,  -0.57106813847685578,
      -0.75140992633253767, 1.0936324469533107,   0.42713780142807245,  0.52562552776804017,
      0.53455020686928123,  -0.55000894066194328, 0.16945927688222073,  -0.9400100589341881},
     {-0.58420119458673248,  0.25460891470415148,   -0.17919782325671715,  0.47261158913124102,
      0.15081230753809122,   -0.316780305920009,    0.43016780030284907,   -0.16982005784521798,
      -0.47813731159344836,  0.3307859989843705,    -0.13732619362181975,  -0.38585276244130895,
      0.27135060469019623,   -0.23991085625764583,  0.52576978415188746,   0.10287671257909239,
      -0.26561275219229008,  0.48421068670688266,   0.019732644043902764,  -0.46022824685158353,
      0.32814484194374233,   -0.055239112404251542, -0.46543498138412032,  0.21481944100556438,
      -0.19906161507509534,  0.48128561088789956,   -0.041387175417183564, -0.35238533638347691,
      0.49198614482945874,   0.11932532151181661,   -0.33236181665093617,  0.34268930615742349,
      -0.041309259201539744, -0.33610892838432804,  0.28680288882765931,   -0.16488572496518672,
      0.58653511708250017,   0.033248694800146535,  -0.39619026462843104,  0.33292878681288396}},
    {1,
     1.0,
     0.5,
     0.5,
     {0.84848188280432102,  0.37397328218362552,  -0.91063689507962642, -0.86698629615347178,
      0.5853133531616741,   -0.65987722628433998, 0.4928825105975409,   -0.93940248483295585,
      -0.33229541329923301, 0.81250893392660772,  -0.59226209705213695, 0.8949351177080288,
      -0.72460249609784444, 0.9288181636846371,   -0.91122470284088142, 0.60962648604592984,
      -0.93704233722369512, -0.2439540458400547,  0.3647385046329098,   -0.91292553103061935,
      0.84171421101556188,  0.92131296469714685,  0.8918248274756525,   0.78481722488058159,
      -0.7635954966113726,  -0.69560035545712828, -0.88481940857601371, -0.74092385849243414,
      0.030425168118763831, 0.83367193623529923,  0.88902340666543944,  -0.81611434984750331,
      -0.85869596194224374, 0.94279702008619337,  0.69402582883026676,  0.78593878936262107,
      0.76609900611273452,  -0.80694270281206082, 0.33317974318109383,  -0.90956394815102393},
     {-0.20962092975121516,
      0.45126507532899451,
      -0.039909804819991734,
      0.17501338847443526,
      0.15076403305267794,
      -0.35994302813943846,
      0.74525742775753501,
      0,
      -0.94925375396382294,
      0.16809598864472486,
      -0.14795800148890453,
      -0.12562986174988,
      0.18516056791502883,
      -0.028778337478231525,
      0.098837289080531271,
      0.14088124274240732,
      -0.036136643667686708,
      1.031890895821173,
      0,
      -0.07691097766485086,
      0.13355572063493254,
      -0.016626350723971138,
      -0.13092656492272081,
      0.13464085728313674,
      -0.15228498294109744,
      0.52440455783247719,
      0.028610046758029195,
      -0.25702599225584999,
      1.1298002640338356,
      0,
      -0.10859456182997093,
      0.16375810067596103,
      -0.038070570593920494,
      -0.05239430946433371,
      0.21109705829294484,
      -0.13371551766856027,
      0.37547901321378641,
      0.058276156164404729,
      -0.71123395846177284,
      0.081193018278113538}},
};

/* Y and dX (of L = sum w * Y, w_i = ((7 i) mod 11) / 5 - 1) against the golden. */
static void check_golden(amd_dtype dt) {
  int64_t dims[] = {2, 5, 2, 2};
  for (int k = 0; k < ARRAY_LEN(lrn_gold); k++) {
    Onnx__AttributeProto *a[4];
    int na = lrn_attrs(a, lrn_gold[k].size, lrn_gold[k].alpha, lrn_gold[k].beta, lrn_gold[k].bias);
    amd_tensor x = gc_tensor(dt, 4, dims, 0, 1), w = gc_tensor(dt, 4, dims, 0, 1),
               dx = gc_tensor(dt, 4, dims, 0, 0);
    amd_tensor out[8] = {{0}}, *in[] = {&x};
    for (int i = 0; i < 40; i++) {
      amd_tensor_set_f64(&x, i, lrn_gold_x[i]);
      amd_tensor_set_f64(&w, i, (double)((i * 7) % 11) / 5.0 - 1.0);
    }
    amd_status st = {{0}};
    gc_node g;
    char label[128];
    snprintf(label, sizeof label, "LRN-13 vs PyTorch size=%lld alpha=%g beta=%g bias=%g %s",
             (long long)lrn_gold[k].size, lrn_gold[k].alpha, lrn_gold[k].beta, lrn_gold[k].bias, dt_name(dt));
    const amd_tensor *dout[8] = {&w};
    amd_tensor *din[8] = {&dx};
    amd_ctx ctx = {.training = 1};
    if (gc_bind(&g, "LRN", 13, a, na, in, 1, 1, &st) || gc_forward(&g.node, in, out, NULL, NULL, &st) ||
        g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st)) {
      printf("FAIL %s: %s\n", label, st.msg);
      gc_failed++;
    } else {
      /* The golden used the float-rounded attributes, as the node does. */
      double ey = 0, ed = 0, tol = dt == AMD_DOUBLE ? 1e-12 : 2e-6;
      for (int i = 0; i < 40; i++) {
        double e1 = fabs(amd_tensor_get_f64(&out[0], i) - lrn_gold[k].y[i]);
        double e2 = fabs(amd_tensor_get_f64(&dx, i) - lrn_gold[k].dx[i]);
        if (e1 > ey || e1 != e1) ey = e1;
        if (e2 > ed || e2 != e2) ed = e2;
      }
      printf("     %s: max |Y - torch| %.2e, max |dX - torch| %.2e\n", label, ey, ed);
      check(ey <= tol && ed <= tol, "%s: within %.0e", label, tol);
    }
    gc_free_outs(out, 1);
    free(g.node.attrs);
    amd_tensor_free(&x);
    amd_tensor_free(&w);
    amd_tensor_free(&dx);
    gc_attrs_free(a, na);
  }
}

/* LRN without its required size attribute is a load error. */
static void test_missing_size(void) {
  Onnx__AttributeProto *a[] = {gc_attr_float("alpha", 0.1f)};
  int64_t dims[] = {1, 3, 2, 2};
  amd_tensor x = gc_tensor(AMD_FLOAT, 4, dims, -1, 1), *in[] = {&x};
  amd_status st = {{0}};
  gc_node g;
  int rc = gc_bind(&g, "LRN", 13, a, 1, in, 1, 1, &st);
  printf("     missing size: \"%s\"\n", st.msg);
  check(rc != 0, "%s: rejected (rc %.0f)", "LRN-13 without size", (double)rc);
  if (rc == 0) free(g.node.attrs);
  amd_tensor_free(&x);
  gc_attrs_free(a, 1);
}

int main(void) {
  (void)gc_attr_ints; /* gradcheck.h helper LRN has no use for */
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    test_grad(dts[i]);
    check_accumulates(dts[i], 3);
    check_accumulates(dts[i], 4);
    check_golden(dts[i]);
  }
  test_forward();
  test_missing_size();
  return gc_summary();
}

/* The golden's generator (Debian /usr/bin/python3, python3-torch 1.13):

import torch
torch.manual_seed(8)
x0 = (torch.rand(2, 5, 2, 2, dtype=torch.float64) * 4 - 2).float().double()
w = torch.tensor([((i * 7) % 11) / 5.0 - 1.0 for i in range(40)], dtype=torch.float64).reshape(2, 5, 2, 2)
def onnx_lrn_via_torch(x, size, alpha, beta, bias):
    m = torch.nn.LocalResponseNorm(size, alpha=alpha, beta=beta, k=bias)
    if size % 2: return m(x)
    # torch's even window is [c - size/2, c + size/2 - 1]; ONNX's is mirrored: flip channels.
    return m(x.flip(1)).flip(1)
cfgs = [(3, 0.1, 0.75, 1.0), (5, 0.5, 0.6, 2.0), (4, 0.3, 0.9, 1.5), (1, 1.0, 0.5, 0.5)]
f = lambda t: ",".join("%.17g" % v for v in t.flatten().tolist())
print("static const double lrn_gold_x[40] = {%s};" % f(x0))
print("static const struct {\n  int64_t size;\n  double alpha, beta, bias, y[40], dx[40];\n} lrn_gold[] = {")
for s, a, b, k in cfgs:
    a, b, k = (torch.tensor(v, dtype=torch.float32).item() for v in (a, b, k))  # ONNX attributes are float
    x = x0.clone().requires_grad_(True)
    y = onnx_lrn_via_torch(x, s, a, b, k)
    (y * w).sum().backward()
    print("  {%d, %r, %r, %r,\n   {%s},\n   {%s}}," % (s, a, b, k, f(y.detach()), f(x.grad)))
print("};")
*/
