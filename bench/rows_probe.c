/* The rescoring's reads, alone: 100 random 1 KiB rows of a vector index's `vectors.f32` (dim
 * 256, as the static table's), 2,000 rounds each, by positioned reads, by a mapping dropped
 * after each round (MADV_DONTNEED), and by a mapping kept (its pages then resident).
 *     cc -O2 bench/rows_probe.c -o /tmp/rows_probe && /tmp/rows_probe DATA/index/MODEL/vectors.f32
 * Read the file once first (cat it to /dev/null) so that it is in the page cache. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIM 256
#define ROUNDS 2000
#define ROWS_A_ROUND 100

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: rows_probe VECTORS.f32\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    long rows = st.st_size / (DIM * 4);
    float buf[DIM], acc = 0;
    srand(1);
    for (int way = 0; way < 3; way++) {
        float *m = NULL;
        if (way > 0) {
            m = mmap(NULL, rows * DIM * 4, PROT_READ, MAP_SHARED, fd, 0);
            madvise(m, rows * DIM * 4, MADV_RANDOM);
        }
        double total = 0;
        for (int r = 0; r < ROUNDS; r++) {
            double t = now_us();
            for (int i = 0; i < ROWS_A_ROUND; i++) {
                long s = rand() % rows;
                if (way == 0)
                    pread(fd, buf, DIM * 4, s * DIM * 4);
                else
                    memcpy(buf, m + s * DIM, DIM * 4);
                acc += buf[3];
            }
            if (way == 1)
                madvise(m, rows * DIM * 4, MADV_DONTNEED);
            total += now_us() - t;
        }
        const char *name[] = {"pread", "mapped, dropped after each round", "mapped, kept"};
        printf("%s: %.1f us for %d rows (mean of %d rounds)\n", name[way], total / ROUNDS, ROWS_A_ROUND, ROUNDS);
    }
    printf("(checksum %f)\n", acc);
    return 0;
}
