/*
 * cli_help.c - help text, man pages and bash completion, all printed from the command
 * and flag tables (see cli_help.h).
 *
 * Descriptions are stored as paragraphs of unwrapped text (wrapped here for a
 * terminal; roff fills them itself); a line that starts with two spaces is printed as
 * it is, for examples and tables.
 */
#include "cli_help.h"

#include <stdbool.h>
#include <string.h>

#include "convfind.h"

#define WIDTH 79
#define FLAG_COLUMN 30

/* The variables the tool and the library read (docs/environment.md says more). */
static const char *const environment[][2] = {
    {"CONVFIND_DB_PATH", "the find database when --db is not given (\":memory:\" for none)"},
    {"XDG_CACHE_HOME", "the database is $XDG_CACHE_HOME/convfind/finddb.sqlite when "
                       "CONVFIND_DB_PATH is not set (an absolute path only)"},
    {"HOME", "else the database is ~/.cache/convfind/finddb.sqlite"},
    {"CONVFIND_SYSTEM_DB", "the read-only system database when --system-db is not given"},
    {"CONVFIND_FLEET_DB", "the fleet tier: a PostgreSQL connection string or URI whose "
                          "decisions machines share (docs/db.md)"},
    {"CONVFIND_ISA", "portable, avx2 or avx512: use at most this CPU instruction set"},
    {"CONVFIND_LOG", "info or debug: print every decision as it is made, on stderr"},
    {"CONVFIND_CUDNN_RUNTIME_COMPILED", "0: no cuDNN engines that compile at run time; 1: "
                                        "for every problem (default: grouped ones only)"},
    {"CONVFIND_FIND_TRACE", "1: print where each Find's time goes, on stderr"},
    {"CONVFIND_CUDA_MODULE", "the CUDA backend module to load (default: beside the library, "
                             "then the install directory)"},
    {"CONVFIND_PYTHON", "the Python interpreter that reads .onnx models for `tune` "
                        "(default python3)"},
};

static const char exit_status[] =
    "0 success; 1 a failure while running (a file that cannot be read or written, a "
    "problem the library rejects, a decision that could not be stored); 2 bad usage (an "
    "unknown or repeated flag, a malformed value, a missing argument).";

/* Prints `text` wrapped to WIDTH, every line but the first indented by `indent`; the
 * first starts at column `col`.  A paragraph of text, no newlines inside. */
static void wrap(FILE *out, const char *text, int indent, int col)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t word = strcspn(p, " ");
        if (word == 0)
            break;
        if (col > indent && col + 1 + (int)word > WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
    }
    fputc('\n', out);
}

/* Calls `line` for every line of `text` (without its newline). */
static void each_line(const char *text, void (*line)(FILE *, const char *, size_t), FILE *out)
{
    while (text && *text) {
        size_t n = strcspn(text, "\n");
        line(out, text, n);
        text += n + (text[n] == '\n');
    }
}

static void text_line(FILE *out, const char *s, size_t n)
{
    if (n == 0 || (n > 1 && s[0] == ' ' && s[1] == ' ')) {
        fprintf(out, "%.*s\n", (int)n, s);
        return;
    }
    char para[4096];
    snprintf(para, sizeof para, "%.*s", (int)n, s);
    wrap(out, para, 0, 0);
}

static void flag_left(char *buf, size_t size, const cli_flag *f)
{
    int n = f->short_name ? snprintf(buf, size, "-%c, --%s", f->short_name, f->name)
                          : snprintf(buf, size, "    --%s", f->name);
    if (f->metavar && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " %s", f->metavar);
}

void cli_print_help(FILE *out, const cli_command *cmd)
{
    const char *syn = cmd->synopsis;
    for (int first = 1; syn && *syn; first = 0) {
        size_t n = strcspn(syn, "\n");
        fprintf(out, "%s convfind %s %.*s\n", first ? "usage:" : "      ", cmd->name, (int)n,
                syn);
        syn += n + (syn[n] == '\n');
    }
    fprintf(out, "\n%s\n\n", cmd->summary);
    each_line(cmd->description, text_line, out);
    for (int s = 0; s < cmd->nsections; s++) {
        fprintf(out, "\n%s:\n", cmd->sections[s].title);
        for (const int *id = cmd->sections[s].flags; *id >= 0; id++) {
            const cli_flag *f = &cli_flags[*id];
            char left[96];
            flag_left(left, sizeof left, f);
            int len = (int)strlen(left) + 2;
            fprintf(out, "  %s", left);
            if (len + 1 > FLAG_COLUMN) {
                fprintf(out, "\n%*s", FLAG_COLUMN, "");
                len = FLAG_COLUMN;
            } else {
                fprintf(out, "%*s", FLAG_COLUMN - len, "");
                len = FLAG_COLUMN;
            }
            wrap(out, f->help, FLAG_COLUMN, len);
        }
    }
    fprintf(out, "\n  -h, --help                  Show this help and exit.\n\nexit status:");
    wrap(out, exit_status, 2, 12);
    if (cmd->examples) {
        fprintf(out, "\nexamples:\n");
        const char *e = cmd->examples;
        while (*e) {
            size_t n = strcspn(e, "\n");
            fprintf(out, "  %.*s\n", (int)n, e);
            e += n + (e[n] == '\n');
        }
    }
}

void cli_print_overview(FILE *out)
{
    fprintf(out, "usage: convfind <command> [options] [arguments]\n\n"
                 "Runs ONNX Conv/ConvTranspose, finds the fastest correct algorithm per problem "
                 "by\nmeasuring, and remembers the decision in a find database.\n\ncommands:\n");
    for (int i = 0; cli_commands[i]; i++)
        fprintf(out, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    fprintf(out, "\n`convfind help COMMAND` or `convfind COMMAND --help` shows a command's "
                 "options.\n\n  -h, --help     show this help\n  --version      print the "
                 "version\n\nenvironment:\n");
    for (size_t i = 0; i < sizeof environment / sizeof environment[0]; i++) {
        fprintf(out, "  %-31s ", environment[i][0]);
        wrap(out, environment[i][1], 34, 34);
    }
    fprintf(out, "\nexit status:");
    wrap(out, exit_status, 2, 12);
}

/* ---- roff ----------------------------------------------------------------------- */

/* Text for roff: backslashes and hyphens escaped, a control character at the start of
 * a line defused. */
static void roff_text(FILE *out, const char *s, size_t n)
{
    if (n > 0 && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", out);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", out);
        else if (s[i] == '-')
            fputs("\\-", out);
        else
            fputc(s[i], out);
    }
}

static void roff_escaped_line(FILE *out, const char *s, size_t n)
{
    roff_text(out, s, n);
    fputc('\n', out);
}

/* Paragraphs become .PP; lines that start with two spaces are kept as they are. */
static void roff_block(FILE *out, const char *text)
{
    bool verbatim = false;
    fputs(".PP\n", out);
    while (text && *text) {
        size_t n = strcspn(text, "\n");
        bool literal = n > 1 && text[0] == ' ' && text[1] == ' ';
        if (literal != verbatim)
            fputs(literal ? ".nf\n" : ".fi\n", out);
        verbatim = literal;
        if (n == 0)
            fputs(".PP\n", out);
        else
            roff_escaped_line(out, text, n);
        text += n + (text[n] == '\n');
    }
    if (verbatim)
        fputs(".fi\n", out);
}

static void roff_header(FILE *out, const char *name, const char *summary)
{
    char upper[64];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof upper; i++)
        upper[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
    upper[i] = '\0';
    fprintf(out, ".TH %s 1 \"\" \"convfind %s\" \"convfind manual\"\n.SH NAME\n", upper,
            convfind_version_string());
    roff_text(out, name, strlen(name));
    fputs(" \\- ", out);
    roff_text(out, summary, strlen(summary));
    fputc('\n', out);
}

static void roff_tail(FILE *out, bool overview)
{
    fputs(".SH EXIT STATUS\n", out);
    roff_text(out, exit_status, strlen(exit_status));
    fputc('\n', out);
    if (overview) {
        fputs(".SH ENVIRONMENT\n", out);
        for (size_t i = 0; i < sizeof environment / sizeof environment[0]; i++) {
            fprintf(out, ".TP\n.B %s\n", environment[i][0]);
            roff_text(out, environment[i][1], strlen(environment[i][1]));
            fputc('\n', out);
        }
    }
    fputs(".SH SEE ALSO\n", out);
    if (overview) {
        for (int i = 0; cli_commands[i]; i++)
            fprintf(out, "%s\\fBconvfind\\-%s\\fR(1)", i ? ",\n" : "", cli_commands[i]->name);
        fputs("\n", out);
    } else {
        fputs("\\fBconvfind\\fR(1)\n", out);
    }
}

void cli_print_man(FILE *out, const cli_command *cmd)
{
    if (!cmd) {
        roff_header(out, "convfind", "run ONNX convolutions with the fastest measured "
                                     "algorithm, remembered in a find database");
        fputs(".SH SYNOPSIS\n.B convfind\n\\fIcommand\\fR [\\fIoptions\\fR] "
              "[\\fIarguments\\fR]\n.SH DESCRIPTION\n", out);
        fputs("convfind runs ONNX Conv and ConvTranspose on x86\\-64 CPUs and NVIDIA GPUs. For "
              "every distinct problem it finds the fastest correct algorithm by measuring the "
              "candidates, and remembers that decision in memory and in a SQLite find "
              "database.\n.SH COMMANDS\n", out);
        for (int i = 0; cli_commands[i]; i++) {
            fprintf(out, ".TP\n\\fBconvfind %s\\fR\n", cli_commands[i]->name);
            roff_text(out, cli_commands[i]->summary, strlen(cli_commands[i]->summary));
            fputc('\n', out);
        }
        roff_tail(out, true);
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "convfind-%s", cmd->name);
    roff_header(out, name, cmd->summary);
    fputs(".SH SYNOPSIS\n", out);
    const char *syn = cmd->synopsis;
    while (syn && *syn) {
        size_t n = strcspn(syn, "\n");
        fprintf(out, ".B convfind %s\n", cmd->name);
        roff_text(out, syn, n);
        fputs("\n.br\n", out);
        syn += n + (syn[n] == '\n');
    }
    fputs(".SH DESCRIPTION\n", out);
    roff_block(out, cmd->description);
    fputs(".SH OPTIONS\n", out);
    for (int s = 0; s < cmd->nsections; s++) {
        fputs(".SS ", out);
        roff_text(out, cmd->sections[s].title, strlen(cmd->sections[s].title));
        fputc('\n', out);
        for (const int *id = cmd->sections[s].flags; *id >= 0; id++) {
            const cli_flag *f = &cli_flags[*id];
            fputs(".TP\n", out);
            if (f->short_name)
                fprintf(out, "\\fB\\-%c\\fR, ", f->short_name);
            fputs("\\fB\\-\\-", out);
            roff_text(out, f->name, strlen(f->name));
            fputs("\\fR", out);
            if (f->metavar) {
                fputs(" \\fI", out);
                roff_text(out, f->metavar, strlen(f->metavar));
                fputs("\\fR", out);
            }
            fputc('\n', out);
            roff_text(out, f->help, strlen(f->help));
            fputc('\n', out);
        }
    }
    fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nShow this help and exit.\n", out);
    if (cmd->examples) {
        fputs(".SH EXAMPLES\n.nf\n", out);
        each_line(cmd->examples, roff_escaped_line, out);
        fputs(".fi\n", out);
    }
    roff_tail(out, false);
}

/* ---- bash completion ------------------------------------------------------------ */

static void words(FILE *out, const char *const *w)
{
    for (int i = 0; w && w[i]; i++)
        fprintf(out, "%s%s", i ? " " : "", w[i]);
}

void cli_print_bash_completion(FILE *out)
{
    fputs("# bash completion for convfind; generated by `convfind help --bash-completion`\n"
          "_convfind()\n{\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    local cmd=${COMP_WORDS[1]} flags= positional=\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        COMPREPLY=($(compgen -W \"", out);
    for (int i = 0; cli_commands[i]; i++)
        fprintf(out, "%s%s", i ? " " : "", cli_commands[i]->name);
    fputs(" --help --version\" -- \"$cur\"))\n        return\n    fi\n    case $cmd in\n", out);
    for (int i = 0; cli_commands[i]; i++) {
        const cli_command *c = cli_commands[i];
        fprintf(out, "    %s) flags=\"--help", c->name);
        for (int s = 0; s < c->nsections; s++)
            for (const int *id = c->sections[s].flags; *id >= 0; id++) {
                fprintf(out, " --%s", cli_flags[*id].name);
                if (cli_flags[*id].short_name)
                    fprintf(out, " -%c", cli_flags[*id].short_name);
            }
        fputs("\"; positional=\"", out);
        words(out, c->words);
        for (int k = 0; c->words_are_commands && cli_commands[k]; k++)
            fprintf(out, "%s%s", k ? " " : "", cli_commands[k]->name);
        fputs("\" ;;\n", out);
    }
    fputs("    esac\n    case $prev in\n", out);
    for (int i = 0; i < CLI_FLAG_COUNT; i++) {
        const cli_flag *f = &cli_flags[i];
        if (!f->metavar)
            continue;
        fprintf(out, "    --%s", f->name);
        if (f->short_name)
            fprintf(out, "|-%c", f->short_name);
        if (f->choices) {
            fputs(") COMPREPLY=($(compgen -W \"", out);
            words(out, f->choices);
            fputs("\" -- \"$cur\")); return ;;\n", out);
        } else {
            fputs(") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", out);
        }
    }
    fputs("    esac\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
          "    elif [ -n \"$positional\" ]; then\n"
          "        COMPREPLY=($(compgen -W \"$positional\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n}\ncomplete -F _convfind convfind\n", out);
}
