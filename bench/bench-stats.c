/* Percentiles of latency samples. */
#include "bench.h"

#include <math.h>

int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

int64_t percentile(const int64_t *sorted, size_t n, double p) {
        size_t rank;

        if (n == 0)
                return 0;
        rank = (size_t)ceil(p / 100.0 * (double)n);
        return sorted[rank > 0 ? rank - 1 : 0];
}
