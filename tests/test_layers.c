/* The include directions of src/ (and the absence of circles there and in tools/), checked against
 * the table in docs/ARCHITECTURE.md ("Layers"): a file may include headers of its own folder and of
 * folders on a lower layer; the public headers (include/) and shaders/abi.h anywhere. A module is a
 * .c/.h pair (one basename in one folder); module A depends on B when a file of A includes B's
 * header, and no module may depend on itself through others.
 *
 * Usage: test_layers REPOSITORY_ROOT */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/stat.h>

#include "test_util.h"

#define MAX_MODULES 256
#define MAX_FOLDERS 32
#define MAX_EDGES 32

typedef struct folder {
    char name[32]; /* "api", "plan", ...; tools' files are in "tools" */
    int layer;     /* -1: not in the table */
} folder;

typedef struct module {
    char name[160]; /* "api/layer" */
    int folder;
    int deps[MAX_EDGES], dep_count;
    char dep_line[MAX_EDGES][400]; /* "api/layer.c includes \"api/context.h\"", for messages */
} module;

static folder folders[MAX_FOLDERS];
static int folder_count;
static module modules[MAX_MODULES];
static int module_count;
static const char *root;

static int folder_index(const char *name)
{
    for (int i = 0; i < folder_count; i++)
        if (strcmp(folders[i].name, name) == 0) return i;
    if (folder_count == MAX_FOLDERS) return -1;
    snprintf(folders[folder_count].name, sizeof folders[0].name, "%s", name);
    folders[folder_count].layer = -1;
    return folder_count++;
}

/* The rows of ARCHITECTURE.md's layer table: "| 2 | `io/`, `device/` | ... |". */
static int read_layers(void)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/docs/ARCHITECTURE.md", root);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int in_section = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0) in_section = strncmp(line, "## Layers", 9) == 0;
        int layer;
        if (!in_section || sscanf(line, "| %d |", &layer) != 1) continue;
        const char *cell = strchr(line + 1, '|'), *end = cell ? strchr(cell + 1, '|') : NULL;
        for (const char *p = cell; p && p < end; p++) {
            if (*p != '`') continue;
            const char *close = strchr(p + 1, '`');
            if (!close || close > end || close[-1] != '/') break;
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)(close - p - 2), p + 1);
            int i = folder_index(name);
            if (i >= 0) folders[i].layer = layer, rows++;
            p = close;
        }
    }
    fclose(f);
    return rows;
}

static int module_index(const char *name, int folder_i)
{
    for (int i = 0; i < module_count; i++)
        if (strcmp(modules[i].name, name) == 0) return i;
    if (module_count == MAX_MODULES) return -1;
    snprintf(modules[module_count].name, sizeof modules[0].name, "%s", name);
    modules[module_count].folder = folder_i;
    return module_count++;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* What `#include "target"` in `dir`/`file` means: a module of src/ or tools/, or -1 for the public
 * headers and the shader ABI (allowed everywhere). *unknown is set for a header found nowhere. */
static int resolve(const char *base, const char *dir, const char *target, int *unknown)
{
    char path[512], name[160];
    *unknown = 0;
    snprintf(path, sizeof path, "%s/%s/%s", root, base, target); /* src/plan/plan.h */
    if (strchr(target, '/') && exists(path)) {
        snprintf(name, sizeof name, "%.*s", (int)(strrchr(target, '.') - target), target);
        char fold[32];
        snprintf(fold, sizeof fold, "%.*s", (int)(strchr(target, '/') - target), target);
        return module_index(name, folder_index(fold));
    }
    snprintf(path, sizeof path, "%s/%s/%s/%s", root, base, dir, target); /* a header beside the file */
    if (!strchr(target, '/') && exists(path)) {
        snprintf(name, sizeof name, "%s/%.*s", dir, (int)(strrchr(target, '.') - target), target);
        return module_index(name, folder_index(dir));
    }
    snprintf(path, sizeof path, "%s/include/%s", root, target);
    char abi[512];
    snprintf(abi, sizeof abi, "%s/shaders/%s", root, target);
    *unknown = !exists(path) && !exists(abi);
    return -1;
}

/* Reads one source file's includes into its module's dependencies. */
static void scan_file(const char *base, const char *dir, const char *file)
{
    char path[512], name[160], line[512];
    snprintf(path, sizeof path, "%s/%s/%s/%s", root, base, dir, file);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    if (!f) return;
    snprintf(name, sizeof name, "%s/%.*s", dir, (int)(strrchr(file, '.') - file), file);
    int m = module_index(name, folder_index(dir));
    while (m >= 0 && fgets(line, sizeof line, f)) {
        char target[256];
        if (sscanf(line, " #include \"%255[^\"]\"", target) != 1) continue;
        int unknown, d = resolve(base, dir, target, &unknown);
        CHECK_MSG(!unknown, "%s/%s includes \"%s\", which is in no folder of the repository", dir, file, target);
        if (d < 0 || d == m || modules[m].dep_count == MAX_EDGES) continue;
        int seen = 0;
        for (int k = 0; k < modules[m].dep_count; k++) seen |= modules[m].deps[k] == d;
        if (seen) continue;
        snprintf(modules[m].dep_line[modules[m].dep_count], sizeof modules[m].dep_line[0], "%s/%s includes \"%s\"", dir,
                 file, target);
        modules[m].deps[modules[m].dep_count++] = d;
    }
    fclose(f);
}

static void scan_folder(const char *base, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", root, base, dir);
    DIR *d = opendir(path);
    CHECK_MSG(d != NULL, "cannot list %s", path);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 2 && e->d_name[n - 2] == '.' && (e->d_name[n - 1] == 'c' || e->d_name[n - 1] == 'h'))
            scan_file(base, dir, e->d_name);
    }
    if (d) closedir(d);
}

/* Every include of src/ points to its own folder or a lower layer. */
static void check_directions(void)
{
    int edges = 0;
    for (int m = 0; m < module_count; m++) {
        const folder *from = &folders[modules[m].folder];
        if (strcmp(from->name, "tools") == 0) continue;
        CHECK_MSG(from->layer >= 0, "src/%s/ is not in the layer table of docs/ARCHITECTURE.md", from->name);
        for (int k = 0; k < modules[m].dep_count; k++) {
            const folder *to = &folders[modules[modules[m].deps[k]].folder];
            edges++;
            if (to == from) continue;
            CHECK_MSG(to->layer >= 0 && to->layer < from->layer, "%s: layer %d (%s/) may not include layer %d (%s/)",
                      modules[m].dep_line[k], from->layer, from->name, to->layer, to->name);
        }
    }
    printf("%d modules, %d include edges between them, %d folders in the layer table\n", module_count, edges,
           folder_count);
}

/* Depth-first search for a circle; prints it through the include lines that make it. */
static int state[MAX_MODULES], via[MAX_MODULES];
static int circles;

static void visit(int m)
{
    state[m] = 1;
    for (int k = 0; k < modules[m].dep_count; k++) {
        int d = modules[m].deps[k];
        via[m] = k;
        if (state[d] == 1) {
            circles++;
            fprintf(stderr, "include circle:\n");
            for (int x = d;; x = modules[x].deps[via[x]]) {
                fprintf(stderr, "  %s\n", modules[x].dep_line[via[x]]);
                if (modules[x].deps[via[x]] == d) break;
            }
        } else if (state[d] == 0) {
            visit(d);
        }
    }
    state[m] = 2;
}

static void check_circles(void)
{
    for (int m = 0; m < module_count; m++)
        if (state[m] == 0) visit(m);
    CHECK_MSG(circles == 0, "%d include circles (above)", circles);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_layers REPOSITORY_ROOT\n");
        return 2;
    }
    root = argv[1];
    int rows = read_layers();
    CHECK_MSG(rows >= 8, "docs/ARCHITECTURE.md has no layer table (\"## Layers\", rows \"| N | `folder/` |\")");
    char path[512];
    snprintf(path, sizeof path, "%s/src", root);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') scan_folder("src", e->d_name);
    if (d) closedir(d);
    scan_folder(".", "tools");
    check_directions();
    check_circles();
    return test_finish();
}
