/* hloscope._native._scan: the optional C accelerator of hloscope's HLO text parser.
 *
 * Each function here takes only the common, simple case of what a pure-Python function of
 * hloscope reads and *declines* everything else (returns None, or stops and hands the position
 * back), so that the Python code handles it. Its results, where it gives one, are the Python
 * code's exactly; `HLOSCOPE_NO_NATIVE=1` runs the Python code alone and the test suite runs the
 * parser tests both ways.
 *
 * To keep that promise simple, every scanner here works on ASCII text only: a line (or value)
 * holding a character outside printable ASCII (tab and line feed aside) is declined, so Python's
 * Unicode-aware `\s` and `\w` and this file's byte classes agree on everything accepted.
 *
 *   fast_lines      hloscope.parsers.text.TextParser.feed's one-line fast paths, line after line
 *   check_run       hloscope.parsers.checks.instructions.check_computation's per-instruction body
 *   split_simple    hloscope.model.attributes._split_simple
 *   split_general   hloscope.model.attributes.split_attributes past _split_simple
 *   attribute_spans hloscope.model.instruction.Instruction._split_attributes
 *   key_values      hloscope.model.attributes.key_values (no escapes, no braced values)
 *   plain_operands  hloscope.model.instruction.Instruction.operands for `%a, %b` lists
 *   validate_run    hloscope.parsers.validate's per-instruction body
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * character classes (ASCII) */
static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
/* [\w.\-] */
static int is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '.' || c == '-'; }
/* printable ASCII or a tab: what the scanners accept inside a line */
static int is_plain(unsigned char c) { return (c >= 0x20 && c < 0x7f) || c == '\t'; }

/* The characters of a str whose every character fits a byte (ASCII or Latin-1): 1, with
 * *data and *length set; 0 for a wider str (declined: what is accepted here is ASCII); -1 on
 * error. Every scanner below accepts printable ASCII only, so a Latin-1 byte is declined too. */
static int text_bytes(PyObject *text, const char **data, Py_ssize_t *length) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected str");
        return -1;
    }
    if (PyUnicode_READY(text) < 0) return -1;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) return 0;
    *length = PyUnicode_GET_LENGTH(text);
    *data = (const char *)PyUnicode_DATA(text);
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * Instructions on one line (see fast_lines below).
 */
enum { N_SLOTS = 10 };
enum { S_NAME, S_OPCODE, S_SHAPE, S_TEXT, S_START, S_END, S_LINE, S_ROOT, S_SOURCE, S_ATTRS };

/* The Instruction class and where each of its slots sits in an instance (from its member
 * descriptors, in __slots__ order), set once by configure(). */
static PyTypeObject *instruction_type = NULL;
static Py_ssize_t slot_offsets[N_SLOTS];

#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + slot_offsets[i]))

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *type, *descriptors;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &type, &PyTuple_Type, &descriptors))
        return NULL;
    if (PyTuple_GET_SIZE(descriptors) != N_SLOTS) {
        PyErr_SetString(PyExc_ValueError, "expected the Instruction's 10 slot descriptors");
        return NULL;
    }
    for (int i = 0; i < N_SLOTS; i++) {
        PyObject *descr = PyTuple_GET_ITEM(descriptors, i);
        if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            PyErr_SetString(PyExc_TypeError, "expected an object slot's member descriptor");
            return NULL;
        }
        slot_offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Py_INCREF(type);
    Py_XSETREF(instruction_type, (PyTypeObject *)type);
    Py_RETURN_NONE;
}

/* A cache of dictionary lookups keyed by a key's characters, so that a shape or opcode seen
 * before is found without making a str of it: only found keys are cached, for tables whose
 * values never change once set (TextParser's intern, tuple shape and opcode tables only grow).
 * It belongs to one parser's tables (`owner`, held) and is emptied when another's come. */
enum { CACHE_SIZE = 4096, CACHE_PROBES = 8 };

typedef struct {
    Py_hash_t hash;
    int table;
    PyObject *key;    /* str (ASCII) */
    PyObject *value;
} CacheEntry;

static CacheEntry cache[CACHE_SIZE];
static PyObject *cache_owner = NULL;

static void cache_reset(PyObject *owner) {
    if (owner == cache_owner) return;
    for (int i = 0; i < CACHE_SIZE; i++) {
        Py_CLEAR(cache[i].key);
        Py_CLEAR(cache[i].value);
    }
    Py_XINCREF(owner);
    Py_XSETREF(cache_owner, owner);
}

static Py_hash_t bytes_hash(const char *s, Py_ssize_t n) {
    Py_uhash_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return (Py_hash_t)(h >> 1);
}

typedef struct {
    PyObject *intern, *tuple_shapes, *opcodes, *source;
} Tables;

static int unpack_tables(PyObject *tables, Tables *t) {
    if (!PyArg_ParseTuple(tables, "O!O!O!U", &PyDict_Type, &t->intern, &PyDict_Type,
                          &t->tuple_shapes, &PyDict_Type, &t->opcodes, &t->source))
        return -1;
    if (instruction_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return -1;
    }
    cache_reset(tables);
    return 0;
}

/* Instruction(name, opcode, shape_text, text, operands_start, operands_end, line, is_root,
 * source) with _attributes None: allocated and its slots set directly, which is what
 * Instruction.__init__ does (it only assigns them). Steals nothing. */
static PyObject *new_instruction(Tables *t, PyObject *name, PyObject *opcode, PyObject *shape,
                                 PyObject *text, Py_ssize_t start, Py_ssize_t end,
                                 Py_ssize_t line, int is_root) {
    PyObject *numbers[3] = {PyLong_FromSsize_t(start), PyLong_FromSsize_t(end),
                            PyLong_FromSsize_t(line)};
    PyObject *obj = NULL;
    if (numbers[0] && numbers[1] && numbers[2])
        obj = instruction_type->tp_alloc(instruction_type, 0);
    if (obj == NULL) {
        for (int i = 0; i < 3; i++) Py_XDECREF(numbers[i]);
        return NULL;
    }
    PyObject *values[N_SLOTS] = {name, opcode, shape, text, numbers[0], numbers[1], numbers[2],
                                 is_root ? Py_True : Py_False, t->source, Py_None};
    for (int i = 0; i < N_SLOTS; i++) {
        if (i < S_START || i > S_LINE) Py_INCREF(values[i]);  /* the numbers are new already */
        SLOT(obj, i) = values[i];
    }
    /* Its slots hold strings, numbers, booleans and (later) a dict of spans: it can be in no
     * reference cycle, so the cyclic collector need not track it. Untracked, the hundreds of
     * thousands of instructions of a large module cost the collection that follows the parse
     * nothing (tracked, that first young collection traverses every one of them). */
    PyObject_GC_UnTrack(obj);
    return obj;
}

/* _simple_complete_line on s[a:b]: brackets `{}` and `()` balanced by count, no comment
 * opener (two slashes, slash-star), and the text does not end (trailing whitespace aside) with one of `,={([`. */
static int simple_complete(const char *s, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t braces = 0, parens = 0;
    char last = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        char c = s[i];
        if (c == '{') braces++;
        else if (c == '}') braces--;
        else if (c == '(') parens++;
        else if (c == ')') parens--;
        else if (c == '/' && i + 1 < b && (s[i + 1] == '/' || s[i + 1] == '*')) return 0;
        if (!is_space(c)) last = c;
    }
    if (braces || parens) return 0;
    return !(last == ',' || last == '=' || last == '{' || last == '(' || last == '[');
}

/* `[ \t]*(?:,|\r?\n?$)` at p, the end of the text at e (a line's, its '\n' included). */
static int at_item_end(const char *s, Py_ssize_t p, Py_ssize_t e) {
    while (p < e && is_blank(s[p])) p++;
    if (p < e && s[p] == ',') return 1;
    if (p < e && s[p] == '\r') p++;
    if (p < e && s[p] == '\n') p++;
    return p == e || (p == e - 1 && s[p] == '\n');
}

/* `[a-z][a-z0-9\-]*\(([^()"]*)\)` then at_item_end, from p; sets the opcode span and the
 * operand span; 0 when it does not match. */
static int opcode_call(const char *s, Py_ssize_t p, Py_ssize_t e, Py_ssize_t *op_end,
                       Py_ssize_t *ops_start, Py_ssize_t *ops_end) {
    if (p >= e || !is_lower(s[p])) return 0;
    while (p < e && (is_lower(s[p]) || is_digit(s[p]) || s[p] == '-')) p++;
    *op_end = p;
    if (p >= e || s[p] != '(') return 0;
    *ops_start = ++p;
    while (p < e && s[p] != '(' && s[p] != ')' && s[p] != '"') p++;
    if (p >= e || s[p] != ')') return 0;
    *ops_end = p;
    return at_item_end(s, p + 1, e);
}

static PyObject *substring(const char *s, Py_ssize_t a, Py_ssize_t b) {
    return PyUnicode_FromStringAndSize(s + a, b - a);  /* ASCII: one byte a character */
}

/* Looks text[a:b] up in `table` (number `which`, for the cache): a new reference to the
 * value, NULL with no error set when absent, NULL with an error set on failure. */
static PyObject *lookup(PyObject *table, int which, const char *s, Py_ssize_t a, Py_ssize_t b) {
    Py_hash_t hash = bytes_hash(s + a, b - a) ^ which;
    Py_ssize_t n = b - a;
    for (int probe = 0; probe < CACHE_PROBES; probe++) {
        CacheEntry *entry = &cache[(hash + probe) & (CACHE_SIZE - 1)];
        if (entry->key == NULL) break;
        if (entry->hash == hash && entry->table == which &&
            PyUnicode_GET_LENGTH(entry->key) == n &&
            memcmp(PyUnicode_DATA(entry->key), s + a, n) == 0) {
            Py_INCREF(entry->value);
            return entry->value;
        }
    }
    PyObject *key = substring(s, a, b);
    if (key == NULL) return NULL;
    PyObject *value = PyDict_GetItemWithError(table, key);
    if (value == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    CacheEntry *slot = &cache[hash & (CACHE_SIZE - 1)];
    for (int probe = 0; probe < CACHE_PROBES; probe++) {
        CacheEntry *entry = &cache[(hash + probe) & (CACHE_SIZE - 1)];
        if (entry->key == NULL) {
            slot = entry;
            break;
        }
    }
    Py_INCREF(value);
    Py_XSETREF(slot->key, key);  /* takes the key's reference */
    Py_XSETREF(slot->value, value);
    slot->hash = hash;
    slot->table = which;
    Py_INCREF(value);
    return value;
}

/* `/\*.*?\*\/` comments of s[a:b] blanked into a new buffer; NULL (no error) when one is not
 * closed on the line, as Python's regex then leaves it (and the line is declined). */
static char *blank_comments(const char *s, Py_ssize_t a, Py_ssize_t b) {
    char *out = PyMem_Malloc(b - a + 1);
    if (out == NULL) return NULL;
    memcpy(out, s + a, b - a);
    out[b - a] = 0;
    Py_ssize_t n = b - a;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        if (out[i] != '/' || out[i + 1] != '*') continue;
        Py_ssize_t j = i + 2;
        while (j + 1 < n && !(out[j] == '*' && out[j + 1] == '/')) j++;
        if (j + 1 >= n) {
            PyMem_Free(out);
            return NULL;
        }
        memset(out + i, ' ', j + 2 - i);
        i = j + 1;
    }
    return out;
}

/* One line s[a:b] (its '\n' included). Returns 1 when taken (an Instruction appended or a
 * blank line), 0 when declined, -1 on error. */
static int take_line(Tables *t, const char *s, Py_ssize_t a, Py_ssize_t b, Py_ssize_t line,
                     PyObject *instructions, int *root_seen) {
    /* One pass: every character plain, and what _simple_complete_line asks of the whole line
     * (brackets `{}` and `()` balanced by count, no comment opener, the last non-blank). */
    Py_ssize_t p = a, i, braces = 0, parens = 0;
    int comment = 0;
    char last = 0;
    for (i = a; i < b; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_plain(c)) {
            if (c == '\n' && i == b - 1) break;
            return 0;
        }
        switch (c) {
        case '{': braces++; break;
        case '}': braces--; break;
        case '(': parens++; break;
        case ')': parens--; break;
        case '/': comment |= i + 1 < b && (s[i + 1] == '/' || s[i + 1] == '*'); break;
        }
        if (!is_blank(c)) last = (char)c;
    }
    if (!last) return 1;  /* a blank line */
    int whole_line_simple = !braces && !parens && !comment && last != ',' && last != '=' &&
                            last != '{' && last != '(' && last != '[';
    while (p < b && is_blank(s[p])) p++;
    int is_root = b - p >= 5 && memcmp(s + p, "ROOT", 4) == 0 && is_blank(s[p + 4]);
    if (is_root) {  /* a second ROOT is an error, which Python reports */
        if (*root_seen) return 0;
        p += 4;
        while (p < b && is_blank(s[p])) p++;
        if (p >= b || !(s[p] == '%' || is_name_start(s[p]))) return 0;  /* `ROOT = ...` */
    }
    if (p < b && s[p] == '%') p++;
    Py_ssize_t name_start = p;
    if (p >= b || !is_name_start(s[p])) return 0;
    while (p < b && is_name_char(s[p])) p++;
    Py_ssize_t name_end = p;
    while (p < b && is_blank(s[p])) p++;
    if (p >= b || s[p] != '=') return 0;
    p++;
    while (p < b && is_blank(s[p])) p++;
    if (p >= b) return 0;

    const char *text = s;       /* the line's characters, blanked comments for a tuple */
    Py_ssize_t base = a;        /* where the line starts in `text` */
    char *blanked = NULL;
    Py_ssize_t shape_start = p, shape_end, op_start, op_end, ops_start, ops_end;
    PyObject *shape_table;
    int shape_which;
    if (s[p] == '(') {          /* a tuple shape, known from the careful path */
        for (i = p; i + 1 < b; i++)
            if (s[i] == '/' && s[i + 1] == '*') break;
        if (i + 1 < b) {
            blanked = blank_comments(s, a, b);
            if (blanked == NULL) return PyErr_Occurred() ? -1 : 0;
            text = blanked;
            base = 0;
        }
        Py_ssize_t tb = base + (b - a), q;
        int found = 0;
        for (q = base + (p - a); q < tb && !found; q++) {
            if (text[q] != ')') continue;
            Py_ssize_t r = q + 1;
            if (r >= tb || !is_blank(text[r])) continue;
            while (r < tb && is_blank(text[r])) r++;
            if (opcode_call(text, r, tb, &op_end, &ops_start, &ops_end)) {
                found = 1;
                shape_end = q + 1;
                op_start = r;
            }
        }
        if (!found || !simple_complete(text, shape_end, tb)) goto decline;
        shape_start = base + (p - a);
        shape_table = t->tuple_shapes;
        shape_which = 1;
    } else {                    /* [a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})? */
        if (!is_lower(s[p])) return 0;
        while (p < b && (is_lower(s[p]) || is_digit(s[p]))) p++;
        if (p >= b || s[p] != '[') return 0;
        while (p < b && s[p] != ']') p++;
        if (p >= b) return 0;
        p++;
        if (p < b && s[p] == '{') {
            Py_ssize_t q = p + 1;
            while (q < b && s[q] != '{' && s[q] != '}') q++;
            if (q >= b || s[q] != '}') return 0;
            p = q + 1;
        }
        shape_end = p;
        if (p >= b || !is_blank(s[p])) return 0;
        while (p < b && is_blank(s[p])) p++;
        op_start = p;
        if (!opcode_call(s, p, b, &op_end, &ops_start, &ops_end)) return 0;
        if (!whole_line_simple) return 0;  /* simple_complete(s, a, b) */
        shape_table = t->intern;
        shape_which = 0;
    }

    int result = -1;
    PyObject *shape = NULL, *opcode = NULL, *name = NULL, *line_text = NULL, *obj = NULL;
    shape = lookup(shape_table, shape_which, text, shape_start, shape_end);
    if (shape == NULL) goto done_or_decline;
    opcode = lookup(t->opcodes, 2, text, op_start, op_end);
    if (opcode == NULL) goto done_or_decline;
    name = substring(s, name_start, name_end);
    line_text = substring(text, base, base + (b - a));
    if (name == NULL || line_text == NULL) goto done;
    obj = new_instruction(t, name, opcode, shape, line_text, ops_start - base, ops_end - base,
                          line, is_root);
    if (obj == NULL) goto done;
    result = PyList_Append(instructions, obj) < 0 ? -1 : 1;
    *root_seen |= is_root;
    goto done;
done_or_decline:
    result = PyErr_Occurred() ? -1 : 0;
done:
    Py_XDECREF(shape);
    Py_XDECREF(opcode);
    Py_XDECREF(name);
    Py_XDECREF(line_text);
    Py_XDECREF(obj);
    if (blanked != NULL) PyMem_Free(blanked);
    return result;
decline:
    if (blanked != NULL) PyMem_Free(blanked);
    return 0;
}

/* A computation header `[ENTRY ]name (p: shape, ...) -> result {` on one line whose parameters
 * are array shapes (what _COMPUTATION_HEADER and _ARRAY_PARAMETERS read in full): 1 with
 * *header = (is_entry, name, ((name, shape), ...), result) where shapes are interned in `intern`
 * and the result's blanks are collapsed, as TextParser._computation_header builds them; 0 to
 * decline (Python reads the line); -1 on error. */
static Py_ssize_t array_shape_end(const char *s, Py_ssize_t p, Py_ssize_t b) {
    /* [a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})? at p: the end, or -1 */
    if (p >= b || !is_lower(s[p])) return -1;
    while (p < b && (is_lower(s[p]) || is_digit(s[p]))) p++;
    if (p >= b || s[p] != '[') return -1;
    while (p < b && s[p] != ']') p++;
    if (p >= b) return -1;
    p++;
    if (p < b && s[p] == '{') {
        Py_ssize_t q = p + 1;
        while (q < b && s[q] != '{' && s[q] != '}') q++;
        if (q >= b || s[q] != '}') return -1;
        p = q + 1;
    }
    return p;
}

static int take_header(Tables *t, const char *s, Py_ssize_t a, Py_ssize_t b, PyObject **header) {
    Py_ssize_t p = a, i, balance = 0;
    char last = 0;
    for (i = a; i < b; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_plain(c) && !(c == '\n' && i == b - 1)) return 0;
        if (c == '"' || c == '/') return 0;
        if (c == '(' || c == '{' || c == '[') balance++;
        else if (c == ')' || c == '}' || c == ']') balance--;
        if (!is_space(c)) last = c;
    }
    if (balance != 1 || last != '{') return 0;
    while (p < b && is_blank(s[p])) p++;
    if (b - p >= 9 && memcmp(s + p, "HloModule", 9) == 0) return 0;
    int is_entry = b - p >= 6 && memcmp(s + p, "ENTRY", 5) == 0 && is_blank(s[p + 5]);
    if (is_entry) {
        p += 5;
        while (p < b && is_blank(s[p])) p++;
    }
    if (p < b && s[p] == '%') p++;
    if (p >= b || !is_name_start(s[p])) return 0;
    Py_ssize_t name_start = p;
    while (p < b && is_name_char(s[p])) p++;
    Py_ssize_t name_end = p;
    while (p < b && is_blank(s[p])) p++;
    if (p >= b || s[p] != '(') return 0;
    p++;
    PyObject *parameters = PyList_New(0), *result = NULL;
    if (parameters == NULL) return -1;
    if (p < b && s[p] == ')') {
        p++;
    } else {
        for (;;) {  /* \s*%?NAME\s*:\s*ARRAY_SHAPE\s* then `,` or `)` */
            while (p < b && is_blank(s[p])) p++;
            if (p < b && s[p] == '%') p++;
            if (p >= b || !is_name_start(s[p])) goto decline;
            Py_ssize_t k = p;
            while (p < b && is_name_char(s[p])) p++;
            Py_ssize_t k_end = p;
            while (p < b && is_blank(s[p])) p++;
            if (p >= b || s[p] != ':') goto decline;
            p++;
            while (p < b && is_blank(s[p])) p++;
            Py_ssize_t shape_start = p, shape_end = array_shape_end(s, p, b);
            if (shape_end < 0) goto decline;
            for (i = shape_start; i < shape_end; i++)
                if (is_blank(s[i]) || s[i] == '-' || s[i] == '>') goto decline;
            p = shape_end;
            while (p < b && is_blank(s[p])) p++;
            PyObject *name = substring(s, k, k_end), *shape = substring(s, shape_start, shape_end);
            PyObject *interned = shape ? PyDict_SetDefault(t->intern, shape, shape) : NULL;
            PyObject *pair = interned && name ? PyTuple_Pack(2, name, interned) : NULL;
            if (pair != NULL) PyObject_GC_UnTrack(pair);  /* two strings: in no cycle */
            int failed = pair == NULL || PyList_Append(parameters, pair) < 0;
            Py_XDECREF(name);
            Py_XDECREF(shape);
            Py_XDECREF(pair);
            if (failed) goto fail;
            if (p < b && s[p] == ',') {
                p++;
                continue;
            }
            if (p < b && s[p] == ')') {
                p++;
                break;
            }
            goto decline;
        }
    }
    while (p < b && is_blank(s[p])) p++;
    if (b - p < 2 || s[p] != '-' || s[p + 1] != '>') goto decline;
    p += 2;
    while (p < b && is_blank(s[p])) p++;
    Py_ssize_t r = p, r_end = b;  /* the result: up to the last `{`, blanks stripped */
    while (r_end > r && s[r_end - 1] != '{') r_end--;
    r_end--;
    while (r_end > r && is_blank(s[r_end - 1])) r_end--;
    if (r_end <= r) goto decline;
    char buffer[512];
    Py_ssize_t length = 0;
    for (i = r; i < r_end; i++) {
        if (s[i] == '-' && i + 1 < r_end && s[i + 1] == '>') goto decline;
        if (length >= (Py_ssize_t)sizeof buffer) goto decline;
        if (is_blank(s[i])) {
            if (length && buffer[length - 1] == ' ') continue;
            buffer[length++] = ' ';
        } else {
            buffer[length++] = s[i];
        }
    }
    result = PyUnicode_FromStringAndSize(buffer, length);
    PyObject *name = substring(s, name_start, name_end);
    PyObject *tuple = PyList_AsTuple(parameters);
    if (tuple != NULL) PyObject_GC_UnTrack(tuple);  /* of untracked pairs: in no cycle */
    if (result == NULL || name == NULL || tuple == NULL) {
        Py_XDECREF(name);
        Py_XDECREF(tuple);
        goto fail;
    }
    *header = Py_BuildValue("(ONNN)", is_entry ? Py_True : Py_False, name, tuple, result);
    Py_DECREF(parameters);
    return *header == NULL ? -1 : 1;
decline:
    Py_DECREF(parameters);
    return 0;
fail:
    Py_DECREF(parameters);
    Py_XDECREF(result);
    return -1;
}

/* `[ \t]*}[ \t]*\n?`: a computation's plain closing line. */
static int is_close(const char *s, Py_ssize_t a, Py_ssize_t b) {
    while (a < b && is_blank(s[a])) a++;
    if (a >= b || s[a] != '}') return 0;
    a++;
    while (a < b && is_blank(s[a])) a++;
    return a == b || (a == b - 1 && s[a] == '\n');
}

static int is_blank_line(const char *s, Py_ssize_t a, Py_ssize_t b) {
    while (a < b && is_blank(s[a])) a++;
    return a == b || (a == b - 1 && s[a] == '\n');
}

/* A computation's instruction list holds Instructions only, which can be in no reference cycle
 * (see new_instruction): untracked, the cyclic collector does not walk it, and so does not
 * touch each of a large module's instructions at every full collection. */
static void untrack_list(PyObject *list) {
    if (list != Py_None && PyObject_GC_IsTracked(list)) PyObject_GC_UnTrack(list);
}

/* fast_lines(chunk, pos, instructions, line_number, root_seen, tables, open_computation)
 *   -> (pos, lines, last_line_start, root_seen, instructions)
 *
 * Reads whole lines from `pos` while TextParser.feed would read each without looking closer,
 * and stops at the first other line (at `pos`, for `feed`):
 * - inside a computation (`instructions` its list, no statement pending): the lines feed reads
 *   with its one-line fast paths (_FAST_INSTRUCTION with _simple_complete_line, or
 *   _add_fast_tuple), each appended to `instructions` as an Instruction; blank lines; and a
 *   plain `}` closing a computation that has instructions, after which no computation is open;
 * - between computations (`instructions` None, no section table open): blank lines, and a
 *   one-line computation header (take_header), for which it calls
 *   open_computation(line_number, is_entry, name, parameters, result): the new computation's
 *   instruction list, or None where the parser would refuse the header (then it stops there).
 * `tables` is (intern, tuple_shapes, opcodes, source): a shape, tuple shape or opcode not in
 * its table yet is declined, so that Python checks and records it first. A ROOT line is taken
 * while `root_seen` is false (a second one is Python's error to report). Returns where it
 * stopped, how many lines it read, where the last one starts, and the open computation's
 * root_seen and instruction list (None when none is open). */
static PyObject *fast_lines(PyObject *self, PyObject *args) {
    PyObject *chunk, *current, *tables, *open_computation;
    Py_ssize_t pos, line;
    int root_seen;
    Tables t;
    if (!PyArg_ParseTuple(args, "UnOnpO!O", &chunk, &pos, &current, &line, &root_seen,
                          &PyTuple_Type, &tables, &open_computation))
        return NULL;
    if (current != Py_None && !PyList_Check(current)) {
        PyErr_SetString(PyExc_TypeError, "instructions: expected a list or None");
        return NULL;
    }
    if (unpack_tables(tables, &t) < 0) return NULL;
    Py_ssize_t n, count = 0, last = pos;
    const char *s;
    int kind = text_bytes(chunk, &s, &n);
    if (kind < 0) return NULL;
    untrack_list(current);
    Py_INCREF(current);
    while (kind && pos >= 0 && pos < n) {
        const char *newline = memchr(s + pos, '\n', n - pos);
        Py_ssize_t end = newline ? newline - s + 1 : n;
        int taken;
        if (current == Py_None) {
            taken = is_blank_line(s, pos, end);
            if (!taken) {
                PyObject *header = NULL;
                int found = take_header(&t, s, pos, end, &header);
                if (found < 0) goto fail;
                if (found) {
                    PyObject *opened = PyObject_CallFunction(open_computation, "nO", line + count,
                                                             header);
                    Py_DECREF(header);
                    if (opened == NULL) goto fail;
                    if (PyList_Check(opened)) {
                        untrack_list(opened);
                        Py_SETREF(current, opened);
                        root_seen = 0;
                        taken = 1;
                    } else {
                        Py_DECREF(opened);
                    }
                }
            }
        } else {
            taken = take_line(&t, s, pos, end, line + count, current, &root_seen);
            if (taken < 0) goto fail;
            if (!taken && PyList_GET_SIZE(current) > 0 && is_close(s, pos, end)) {
                Py_INCREF(Py_None);
                Py_SETREF(current, Py_None);
                taken = 1;
            }
        }
        if (!taken) break;
        last = pos;
        pos = end;
        count++;
    }
    return Py_BuildValue("nnniN", pos, count, last, root_seen, current);
fail:
    Py_DECREF(current);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Operand lists: `[ \t]*%?NAME[ \t]*` items separated by `,` where NAME is [^\s,%] characters
 * that _PLAIN_OPERANDS allows (no `[]{}()"/`). For those, _LAST_WORD_OF_ITEM.findall gives the
 * NAMEs; an empty or blank list gives none. Returns the count of names (filling starts/ends up
 * to `cap`), or -1 to decline. */
/* Blanks and `/\*...*\/` comments from p (a comment must close before b): the end, or -1. */
static Py_ssize_t skip_blanks_comments(const char *s, Py_ssize_t p, Py_ssize_t b) {
    for (;;) {
        while (p < b && is_blank(s[p])) p++;
        if (p + 1 >= b || s[p] != '/' || s[p + 1] != '*') return p;
        Py_ssize_t q = p + 2;
        while (q + 1 < b && !(s[q] == '*' && s[q + 1] == '/')) q++;
        if (q + 1 >= b) return -1;
        p = q + 2;
    }
}

static Py_ssize_t operand_spans(const char *s, Py_ssize_t a, Py_ssize_t b, Py_ssize_t *starts,
                                Py_ssize_t *ends, Py_ssize_t cap) {
    /* With a comment (`/\*index=5*\/`), Python's slow path reads the list with the comments
     * blanked: the last word of each non-blank item, `%` stripped; the same names here. */
    Py_ssize_t p = a, count = 0;
    for (Py_ssize_t i = a; i < b; i++)
        if (!is_plain((unsigned char)s[i])) return -1;
    p = skip_blanks_comments(s, p, b);
    if (p < 0) return -1;
    if (p == b) return 0;
    for (;;) {
        p = skip_blanks_comments(s, p, b);
        if (p < 0) return -1;
        if (p < b && s[p] == '%') p++;
        Py_ssize_t start = p;
        while (p < b) {
            char c = s[p];
            if (is_blank(c) || c == ',' || c == '%') break;
            if (!is_plain((unsigned char)c) || strchr("[]{}()\"/", c) != NULL) return -1;
            p++;
        }
        if (p == start) return -1;
        if (count < cap) {
            starts[count] = start;
            ends[count] = p;
        }
        count++;
        p = skip_blanks_comments(s, p, b);
        if (p < 0) return -1;
        if (p == b) return count;
        if (s[p] != ',') return -1;
        p++;
    }
}

/* plain_operands(text, start, end) -> tuple of names, or None to decline. */
static PyObject *plain_operands(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t a, b, n;
    if (!PyArg_ParseTuple(args, "Unn", &text, &a, &b)) return NULL;
    const char *s;
    int kind = text_bytes(text, &s, &n);
    if (kind < 0) return NULL;
    if (!kind || a < 0 || b > n || a > b) Py_RETURN_NONE;
    Py_ssize_t starts[64], ends[64];
    Py_ssize_t count = operand_spans(s, a, b, starts, ends, 64);
    if (count < 0 || count > 64) Py_RETURN_NONE;
    PyObject *names = PyTuple_New(count);
    if (names == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = substring(s, starts[i], ends[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

/* At a `,` at s[p]: `,\s*([A-Za-z_][\w.\-]*)\s*=` there sets the key's span [*k, *k_end) and
 * returns the position of its `=`; -1 when no key starts here. */
static Py_ssize_t key_at(const char *s, Py_ssize_t p, Py_ssize_t n, Py_ssize_t *k,
                         Py_ssize_t *k_end) {
    if (s[p] != ',') return -1;
    Py_ssize_t q = p + 1;
    while (q < n && is_space(s[q])) q++;
    if (q >= n || !is_name_start(s[q])) return -1;
    *k = q;
    while (q < n && is_name_char(s[q])) q++;
    *k_end = q;
    while (q < n && is_space(s[q])) q++;
    return q < n && s[q] == '=' ? q : -1;
}

/* ---------------------------------------------------------------------------------------------
 * check_run(instructions, index, defined, parameters, memo, arity, above) -> index
 *
 * check_computation's body for instructions[index:], while each is one it passes without
 * looking closer: a new name; a parameter whose number is plain digits and new; a constant
 * whose (shape, literal) passed before; operands that are a plain list of names defined above,
 * as many as `arity` allows; attribute keys (found as _KEY_CANDIDATE finds them) whose
 * (opcode, *keys) passed before, or ("=called", opcode, *keys) did, which needs the computations
 * they name to be keys of `above` (as _check_called's first step finds them). Records what check_computation records (defined, parameters)
 * and returns the index of the first instruction it leaves to Python.
 */
static PyObject *attribute_keys(const char *s, Py_ssize_t from, Py_ssize_t n, PyObject *opcode) {
    /* (opcode, *keys) for `,\s*([A-Za-z_][\w.\-]*)\s*=` found from `from`; NULL no error when
     * the text is not ASCII-plain (declined). */
    PyObject *keys = PyList_New(0);
    if (keys == NULL) return NULL;
    if (PyList_Append(keys, opcode) < 0) goto fail;
    for (Py_ssize_t p = from; p < n; p++) {
        Py_ssize_t k, k_end, q = key_at(s, p, n, &k, &k_end);
        if (q < 0) continue;
        PyObject *key = substring(s, k, k_end);
        if (key == NULL || PyList_Append(keys, key) < 0) {
            Py_XDECREF(key);
            goto fail;
        }
        Py_DECREF(key);
        p = q;
    }
    PyObject *tuple = PyList_AsTuple(keys);
    Py_DECREF(keys);
    return tuple;
fail:
    Py_DECREF(keys);
    return NULL;
}

/* _check_called's first step: every key naming computations from `from` (_CALLED_KEY_AT: after
 * `,` or a blank, then `=`) has a value it can trust (_CALLED_VALUE) whose every name
 * (_NAME_IN_LIST) is a key of `above`. 1 when all are, 0 when one is not, -1 on error. */
static const char *CALLED_KEYS[] = {"calls", "to_apply", "body", "condition",
                                    "branch_computations", "true_computation",
                                    "false_computation", "select", "scatter",
                                    "called_computations", NULL};

static int names_known(const char *s, Py_ssize_t a, Py_ssize_t b, PyObject *above) {
    Py_ssize_t p = a;
    while (p < b) {
        if (!is_name_char(s[p])) {
            p++;
            continue;
        }
        Py_ssize_t start = p;
        while (p < b && is_name_char(s[p])) p++;
        PyObject *name = substring(s, start, p);
        if (name == NULL) return -1;
        int found = PyDict_Contains(above, name);
        Py_DECREF(name);
        if (found <= 0) return found;
    }
    return 1;
}

/* _CALLED_VALUE: the end of a called value at q that the first step can trust, `{%a, %b}` or
 * `%name` (names of name characters), then blanks and a `,` or the end; -1 for any other. */
static Py_ssize_t called_value_at(const char *s, Py_ssize_t q, Py_ssize_t n);
static Py_ssize_t called_value_end(const char *s, Py_ssize_t q, Py_ssize_t n) {
    Py_ssize_t r = called_value_at(s, q, n);
    if (r < 0) return -1;
    Py_ssize_t t = r;
    while (t < n && is_space(s[t])) t++;
    return (t >= n || s[t] == ',') ? r : -1;
}
static Py_ssize_t called_value_at(const char *s, Py_ssize_t q, Py_ssize_t n) {
    Py_ssize_t r = q;
    if (r < n && s[r] == '{') {
        r++;
        while (r < n && is_space(s[r])) r++;
        if (r < n && s[r] == '}') return r + 1;
        for (;;) {
            if (r < n && s[r] == '%') r++;
            Py_ssize_t word = r;
            while (r < n && is_name_char(s[r])) r++;
            if (r == word) return -1;
            while (r < n && is_space(s[r])) r++;
            if (r < n && s[r] == '}') return r + 1;
            if (r >= n || s[r] != ',') return -1;
            r++;
            while (r < n && is_space(s[r])) r++;
        }
    }
    if (r < n && s[r] == '%') r++;
    Py_ssize_t word = r;
    while (r < n && is_name_char(s[r])) r++;
    if (r == word || (r < n && s[r] != ',' && !is_space(s[r]))) return -1;
    return r;
}

static int called_known(const char *s, Py_ssize_t from, Py_ssize_t n, PyObject *above) {
    Py_ssize_t i = from;
    while (i < n) {
        if (s[i] != ',' && !is_space(s[i])) {
            i++;
            continue;
        }
        Py_ssize_t q = -1;
        for (int k = 0; CALLED_KEYS[k] != NULL; k++) {
            size_t length = strlen(CALLED_KEYS[k]);
            if ((Py_ssize_t)(i + 1 + length) <= n && memcmp(s + i + 1, CALLED_KEYS[k], length) == 0) {
                q = i + 1 + length;
                break;
            }
        }
        if (q < 0) {
            i++;
            continue;
        }
        while (q < n && is_space(s[q])) q++;
        if (q >= n || s[q] != '=') {
            i++;
            continue;
        }
        q++;
        while (q < n && is_space(s[q])) q++;
        Py_ssize_t v = q, v_end = called_value_end(s, q, n);
        if (v_end < 0) return 0; /* not a value this step can trust: the attribute split decides */
        int known = names_known(s, v, v_end, above);
        if (known <= 0) return known;
        i = v_end;
    }
    return 1;
}

static int text_is_plain(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_plain(c) && c != '\n' && c != '\r') return 0;
    }
    return 1;
}

/* What passed check_computation's attribute test before, by (opcode, *keys) written out as
 * characters: 1 in the memo, 2 in it tagged "=called". Only found entries are cached (the memo
 * only grows); it belongs to one memo set (held) and is emptied when another comes. */
enum { MEMO_CACHE_SIZE = 1024, SIGNATURE_MAX = 1024 };

typedef struct {
    Py_hash_t hash;
    Py_ssize_t length;
    char *signature;
    int passed;
} MemoEntry;

static MemoEntry memo_cache[MEMO_CACHE_SIZE];
static PyObject *memo_owner = NULL;

static void memo_reset(PyObject *owner) {
    if (owner == memo_owner) return;
    for (int i = 0; i < MEMO_CACHE_SIZE; i++) {
        PyMem_Free(memo_cache[i].signature);
        memo_cache[i].signature = NULL;
    }
    Py_XINCREF(owner);
    Py_XSETREF(memo_owner, owner);
}

/* The opcode and the keys _KEY_CANDIDATE finds from `from`, each followed by a NUL; -1 when
 * longer than SIGNATURE_MAX. */
static Py_ssize_t key_signature(PyObject *opcode, const char *s, Py_ssize_t from, Py_ssize_t n,
                                char *out) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(opcode), used;
    if (PyUnicode_KIND(opcode) != PyUnicode_1BYTE_KIND || length + 1 > SIGNATURE_MAX) return -1;
    memcpy(out, PyUnicode_DATA(opcode), length);
    out[length] = 0;
    used = length + 1;
    for (Py_ssize_t p = from; p < n; p++) {
        Py_ssize_t k, k_end, q = key_at(s, p, n, &k, &k_end);
        if (q < 0) continue;
        if (used + (k_end - k) + 1 > SIGNATURE_MAX) return -1;
        memcpy(out + used, s + k, k_end - k);
        used += k_end - k;
        out[used++] = 0;
        p = q;
    }
    return used;
}

static MemoEntry *memo_find(const char *signature, Py_ssize_t length, Py_hash_t hash) {
    MemoEntry *entry = &memo_cache[hash & (MEMO_CACHE_SIZE - 1)];
    if (entry->signature != NULL && entry->hash == hash && entry->length == length &&
        memcmp(entry->signature, signature, length) == 0)
        return entry;
    return NULL;
}

static void memo_store(const char *signature, Py_ssize_t length, Py_hash_t hash, int passed) {
    MemoEntry *entry = &memo_cache[hash & (MEMO_CACHE_SIZE - 1)];
    char *copy = PyMem_Malloc(length);
    if (copy == NULL) return;  /* a cache: nothing lost */
    memcpy(copy, signature, length);
    PyMem_Free(entry->signature);
    entry->signature = copy;
    entry->length = length;
    entry->hash = hash;
    entry->passed = passed;
}

/* 1 when the instruction passes as described above, 0 to decline, -1 on error. */
static int check_one(PyObject *ins, PyObject *defined, PyObject *parameters, PyObject *memo,
                     PyObject *arity, PyObject *above, PyObject *names[]) {
    PyObject *item = NULL, *parameter = NULL;  /* parameter: borrowed item */
    int result = -1;
    if (Py_TYPE(ins) != instruction_type) return 0;
    /* borrowed: the instruction holds them */
    PyObject *name = SLOT(ins, S_NAME), *opcode = SLOT(ins, S_OPCODE), *text = SLOT(ins, S_TEXT);
    PyObject *o_start = SLOT(ins, S_START), *o_end = SLOT(ins, S_END);
    if (!name || !opcode || !text || !o_start || !o_end || !PyUnicode_Check(name) ||
        !PyUnicode_Check(text) || !PyUnicode_Check(opcode) || !PyLong_Check(o_start) ||
        !PyLong_Check(o_end))
        return 0;
    Py_ssize_t n, a = PyLong_AsSsize_t(o_start), b = PyLong_AsSsize_t(o_end);
    if (PyErr_Occurred()) goto done;
    const char *s;
    int kind = text_bytes(text, &s, &n);
    if (kind < 0) goto done;
    if (!kind || a < 0 || b > n || a > b || !text_is_plain(s, n)) goto decline;
    int known = PyDict_Contains(defined, name);
    if (known) goto decline_or_error;
    if (PyUnicode_CompareWithASCIIString(opcode, "parameter") == 0) {
        long long number = 0;
        if (a == b || b - a > 15) goto decline;
        for (Py_ssize_t i = a; i < b; i++) {
            if (!is_digit(s[i])) goto decline;
            number = number * 10 + (s[i] - '0');
        }
        item = PyLong_FromLongLong(number);
        if (item == NULL) goto done;
        int seen = PyDict_Contains(parameters, item);
        if (seen) goto decline_or_error;
        parameter = item;
    } else if (PyUnicode_CompareWithASCIIString(opcode, "constant") == 0) {
        PyObject *shape = SLOT(ins, S_SHAPE);
        if (shape == NULL) goto decline;
        PyObject *literal = substring(s, a, b);
        if (literal == NULL) goto done;
        item = PyTuple_Pack(3, names[6], shape, literal);
        Py_DECREF(literal);
        if (item == NULL) goto done;
        int seen = PySet_Contains(memo, item);
        if (seen <= 0) goto decline_or_error;
    } else {
        Py_ssize_t starts[64], ends[64];
        Py_ssize_t count = operand_spans(s, a, b, starts, ends, 64);
        if (count < 0 || count > 64) goto decline;
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *operand = substring(s, starts[i], ends[i]);
            if (operand == NULL) goto done;
            int found = PyDict_Contains(defined, operand);
            Py_DECREF(operand);
            if (found <= 0) goto decline_or_error;
        }
        PyObject *bounds = PyDict_GetItemWithError(arity, opcode);
        if (bounds == NULL && PyErr_Occurred()) goto done;
        if (bounds != NULL) {
            Py_ssize_t low, high;
            if (!PyArg_ParseTuple(bounds, "nn", &low, &high)) goto done;
            if (count < low || count > high) goto decline;
        }
    }
    if (b + 1 < n) {
        char signature[SIGNATURE_MAX];
        Py_ssize_t length = key_signature(opcode, s, b, n, signature);
        if (length == PyUnicode_GET_LENGTH(opcode) + 1) goto attributes_done;  /* no keys */
        Py_hash_t hash = length > 0 ? bytes_hash(signature, length) : 0;
        MemoEntry *known = length > 0 ? memo_find(signature, length, hash) : NULL;
        if (known != NULL) {
            int passed = known->passed == 1 ? 1 : called_known(s, b, n, above);
            if (passed <= 0) goto decline_or_error;
            goto attributes_done;
        }
        PyObject *keys = attribute_keys(s, b, n, opcode);
        if (keys == NULL) goto done;
        int passed = PyTuple_GET_SIZE(keys) <= 1 ? 1 : PySet_Contains(memo, keys);
        if (passed == 0) {  /* keys that passed but for the computations they name */
            PyObject *tagged = PyTuple_New(PyTuple_GET_SIZE(keys) + 1);
            if (tagged == NULL) {
                Py_DECREF(keys);
                goto done;
            }
            Py_INCREF(names[7]);
            PyTuple_SET_ITEM(tagged, 0, names[7]);
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
                PyObject *key = PyTuple_GET_ITEM(keys, i);
                Py_INCREF(key);
                PyTuple_SET_ITEM(tagged, i + 1, key);
            }
            passed = PySet_Contains(memo, tagged);
            Py_DECREF(tagged);
            if (passed > 0 && length > 0) memo_store(signature, length, hash, 2);
            if (passed > 0) passed = called_known(s, b, n, above);
        } else if (passed > 0 && length > 0 && PyTuple_GET_SIZE(keys) > 1) {
            memo_store(signature, length, hash, 1);
        }
        Py_DECREF(keys);
        if (passed <= 0) goto decline_or_error;
    }
attributes_done:
    if (parameter != NULL && PyDict_SetItem(parameters, parameter, ins) < 0) goto done;
    result = PyDict_SetItem(defined, name, ins) < 0 ? -1 : 1;
    goto done;
decline_or_error:
    result = PyErr_Occurred() ? -1 : 0;
    goto done;
decline:
    result = 0;
done:
    Py_XDECREF(item);
    return result;
}

static PyObject *attr_names[8];

static PyObject *check_run(PyObject *self, PyObject *args) {
    PyObject *instructions, *defined, *parameters, *memo, *arity, *above;
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "O!nO!O!O!O!O!", &PyList_Type, &instructions, &index,
                          &PyDict_Type, &defined, &PyDict_Type, &parameters, &PySet_Type, &memo,
                          &PyDict_Type, &arity, &PyDict_Type, &above))
        return NULL;
    if (instruction_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    memo_reset(memo);
    Py_ssize_t n = PyList_GET_SIZE(instructions);
    while (index < n) {
        int passed = check_one(PyList_GET_ITEM(instructions, index), defined, parameters, memo,
                               arity, above, attr_names);
        if (passed < 0) return NULL;
        if (!passed) break;
        index++;
    }
    return PyLong_FromSsize_t(index);
}

/* ---------------------------------------------------------------------------------------------
 * split_simple(text, start) -> {key: (start, end)} or None: _split_simple's result, where every
 * item is `\s*KEY\s*=\s*VALUE\s*(,|\Z)`, VALUE a string, a bare word or a bracket block nested
 * at most 4 deep; None for anything else (Python then splits it). */
enum { SIMPLE_LIMIT = 4096 };

/* `"[^"\\\n]*(?:\\.[^"\\\n]*)*"` at p: the end, or -1. */
static Py_ssize_t string_end(const char *s, Py_ssize_t p, Py_ssize_t n) {
    p++;
    while (p < n) {
        char c = s[p];
        if (c == '"') return p + 1;
        if (c == '\n') return -1;
        if (c == '\\') {
            if (p + 1 >= n || s[p + 1] == '\n') return -1;
            p += 2;
            continue;
        }
        p++;
    }
    return -1;
}

/* _nested(depth) at p (an opening bracket): the end, or -1. */
static Py_ssize_t nested_end(const char *s, Py_ssize_t p, Py_ssize_t n, int depth) {
    char open = s[p], close = open == '{' ? '}' : open == '[' ? ']' : ')';
    p++;
    while (p < n) {
        char c = s[p];
        if (c == close) return p + 1;
        if (c == '"') {
            p = string_end(s, p, n);
            if (p < 0) return -1;
        } else if (c == '{' || c == '[' || c == '(') {
            if (depth <= 1) return -1;
            p = nested_end(s, p, n, depth - 1);
            if (p < 0) return -1;
        } else if (c == '}' || c == ']' || c == ')' || c == '/') {
            return -1;
        } else {
            p++;
        }
    }
    return -1;
}

/* _split_simple on s[start:n]: a new dict, None (a new reference) to decline, NULL on error. */
static PyObject *split_simple_at(const char *s, Py_ssize_t n, Py_ssize_t start) {
    if (start < 0 || start > n || n - start > SIMPLE_LIMIT || !text_is_plain(s + start, n - start))
        Py_RETURN_NONE;
    PyObject *found = PyDict_New();
    if (found == NULL) return NULL;
    Py_ssize_t p = start;
    for (;;) {
        while (p < n && is_space(s[p])) p++;
        if (p >= n || !is_name_start(s[p])) goto decline;
        Py_ssize_t k = p;
        while (p < n && is_name_char(s[p])) p++;
        Py_ssize_t k_end = p;
        while (p < n && is_space(s[p])) p++;
        if (p >= n || s[p] != '=') goto decline;
        p++;
        while (p < n && is_space(s[p])) p++;
        if (p >= n) goto decline;
        Py_ssize_t v = p, v_end;
        char c = s[p];
        if (c == '"') {
            v_end = string_end(s, p, n);
        } else if (c == '{' || c == '[' || c == '(') {
            v_end = nested_end(s, p, n, 4);
        } else {
            while (p < n && !is_space(s[p]) && !strchr(",{}()[]\"/", s[p])) p++;
            v_end = p > v ? p : -1;
        }
        if (v_end < 0) goto decline;
        p = v_end;
        while (p < n && is_space(s[p])) p++;
        PyObject *key = substring(s, k, k_end);
        PyObject *span = Py_BuildValue("(nn)", v, v_end);
        int failed = key == NULL || span == NULL || PyDict_SetItem(found, key, span) < 0;
        Py_XDECREF(key);
        Py_XDECREF(span);
        if (failed) {
            Py_DECREF(found);
            return NULL;
        }
        if (p >= n) return found;
        if (s[p] != ',') goto decline;
        p++;
    }
decline:
    Py_DECREF(found);
    Py_RETURN_NONE;
}

typedef PyObject *(*split_at_fn)(const char *, Py_ssize_t, Py_ssize_t);

/* (text, start) -> `at`'s result on the text's bytes; None for a text that is not plain. */
static PyObject *split_on_text(PyObject *args, split_at_fn at) {
    PyObject *text;
    Py_ssize_t start, n;
    if (!PyArg_ParseTuple(args, "Un", &text, &start)) return NULL;
    const char *s;
    int kind = text_bytes(text, &s, &n);
    if (kind < 0) return NULL;
    if (!kind) Py_RETURN_NONE;
    return at(s, n, start);
}

static PyObject *split_simple(PyObject *self, PyObject *args) {
    return split_on_text(args, split_simple_at);
}

/* split_attributes' general path on s[start:n] (split_top_level, then _KEY per item): a new
 * dict where it raises nothing, None (a new reference) to decline, NULL on error. */
static PyObject *split_general_at(const char *s, Py_ssize_t n, Py_ssize_t start) {
    if (start < 0 || start > n || !text_is_plain(s + start, n - start)) Py_RETURN_NONE;
    PyObject *found = PyDict_New();
    if (found == NULL) return NULL;
    Py_ssize_t p = start, depth = 0, item = start;
    int items = 0;
    for (;;) {
        Py_ssize_t item_end = -1;
        while (p < n && item_end < 0) {
            char c = s[p];
            if (c == '"') {
                p = string_end(s, p, n);
                if (p < 0) goto decline;
                continue;
            }
            if (c == '/' && p + 1 < n && s[p + 1] == '*') {  /* `/\*.*?\*\/`, on one line */
                Py_ssize_t q = p + 2;
                while (q + 1 < n && s[q] != '\n' && !(s[q] == '*' && s[q + 1] == '/')) q++;
                if (q + 1 < n && s[q] == '*') {
                    p = q + 2;
                    continue;
                }
            }
            if (c == '(' || c == '{' || c == '[') {
                depth++;
            } else if (c == ')' || c == '}' || c == ']') {
                if (--depth < 0) goto decline;
            } else if (c == ',' && depth == 0) {
                item_end = p;
            }
            p++;
        }
        if (item_end < 0) {  /* the text's end: the last item, unless blank after no comma */
            if (depth) goto decline;
            Py_ssize_t q = item;
            while (q < n && is_space(s[q])) q++;
            if (q == n && !items) break;
            item_end = n;
        }
        /* _KEY: \s*([A-Za-z_][\w.\-]*)\s*=\s* within the item, then a non-blank value */
        Py_ssize_t q = item;
        while (q < item_end && is_space(s[q])) q++;
        if (q >= item_end || !is_name_start(s[q])) goto decline;
        Py_ssize_t k = q;
        while (q < item_end && is_name_char(s[q])) q++;
        Py_ssize_t k_end = q;
        while (q < item_end && is_space(s[q])) q++;
        if (q >= item_end || s[q] != '=') goto decline;
        q++;
        while (q < item_end && is_space(s[q])) q++;
        if (q >= item_end) goto decline;
        Py_ssize_t v_end = item_end;
        while (v_end > 0 && is_space(s[v_end - 1])) v_end--;
        PyObject *key = substring(s, k, k_end);
        PyObject *span = Py_BuildValue("(nn)", q, v_end);
        int failed = key == NULL || span == NULL || PyDict_SetItem(found, key, span) < 0;
        Py_XDECREF(key);
        Py_XDECREF(span);
        if (failed) {
            Py_DECREF(found);
            return NULL;
        }
        items++;
        if (item_end == n) break;
        item = p;
    }
    return found;
decline:
    Py_DECREF(found);
    Py_RETURN_NONE;
}

static PyObject *split_general(PyObject *self, PyObject *args) {
    return split_on_text(args, split_general_at);
}

/* attribute_spans(text, start) -> dict or None: Instruction._split_attributes from `start` (just
 * after the operand list's `)`): {} when only blanks follow, else `,` and split_simple's result;
 * None to decline (Python then reads it, errors included). */
static PyObject *spans_at(PyObject *text, Py_ssize_t start) {
    Py_ssize_t n;
    const char *s;
    int kind = text_bytes(text, &s, &n);
    if (kind < 0) return NULL;
    if (!kind || start < 0 || start > n || !text_is_plain(s + start, n - start)) Py_RETURN_NONE;
    Py_ssize_t p = start;
    while (p < n && is_space(s[p])) p++;
    if (p == n) return PyDict_New();
    if (s[p] != ',') Py_RETURN_NONE;
    PyObject *found = split_simple_at(s, n, p + 1);
    if (found != Py_None) return found;
    Py_DECREF(found);
    return split_general_at(s, n, p + 1);
}

static PyObject *attribute_spans(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "Un", &text, &start)) return NULL;
    return spans_at(text, start);
}

/* ---------------------------------------------------------------------------------------------
 * validate_run(instructions, index, names, shapes, converters, computations) -> index
 *
 * hloscope.parsers.validate's body for instructions[index:], while each is one it passes
 * without looking closer: its shape text is in `shapes` (parsed before), its operands are a list
 * _plain_ names (operand_spans) that are all in `names`, its attributes split here
 * (attribute_spans) and each typed one converted by `converters[key]` without an exception,
 * and the computations it calls (Instruction.called_computations, read as it reads them) are
 * keys of `computations`. Returns the index of the first instruction it leaves to Python. */
static int called_exist(const char *s, Py_ssize_t n, Py_ssize_t from, PyObject *spans,
                        PyObject *computations) {
    /* _CALLED_KEY.search(text, operands_end): `key=` anywhere after the operands */
    int any = 0;
    for (int k = 0; CALLED_KEYS[k] != NULL && !any; k++) {
        size_t length = strlen(CALLED_KEYS[k]);
        for (Py_ssize_t p = from; p + (Py_ssize_t)length < n && !any; p++)
            any = s[p + length] == '=' && memcmp(s + p, CALLED_KEYS[k], length) == 0;
    }
    if (!any) return 1;
    for (int k = 0; CALLED_KEYS[k] != NULL; k++) {
        PyObject *span = PyDict_GetItemString(spans, CALLED_KEYS[k]);
        if (span == NULL) continue;
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        /* attributes.computation_names: strip, `{...}` unwrapped, split at `,`, each item
         * stripped and its leading `%`s removed, empty ones dropped */
        while (a < b && is_space(s[a])) a++;
        while (b > a && is_space(s[b - 1])) b--;
        if (b - a >= 2 && s[a] == '{' && s[b - 1] == '}') {
            a++;
            b--;
        }
        Py_ssize_t p = a;
        while (p <= b) {
            Py_ssize_t q = p;
            while (q < b && s[q] != ',') q++;
            Py_ssize_t x = p, y = q;
            while (x < y && is_space(s[x])) x++;
            while (y > x && is_space(s[y - 1])) y--;
            if (y > x) {
                while (x < y && s[x] == '%') x++;
                PyObject *name = substring(s, x, y);
                if (name == NULL) return -1;
                int found = PyDict_Contains(computations, name);
                Py_DECREF(name);
                if (found <= 0) return found;
            }
            p = q + 1;
        }
    }
    return 1;
}

/* 1 when passed, 0 to decline, -1 on error. */
static int validate_one(PyObject *ins, PyObject *names, PyObject *shapes, PyObject *converters,
                        PyObject *computations) {
    if (Py_TYPE(ins) != instruction_type) return 0;
    PyObject *opcode = SLOT(ins, S_OPCODE), *text = SLOT(ins, S_TEXT), *shape = SLOT(ins, S_SHAPE);
    PyObject *o_start = SLOT(ins, S_START), *o_end = SLOT(ins, S_END);
    if (!opcode || !text || !shape || !o_start || !o_end || SLOT(ins, S_ATTRS) != Py_None ||
        !PyUnicode_Check(opcode) || !PyUnicode_Check(text) || !PyLong_Check(o_start) ||
        !PyLong_Check(o_end))
        return 0;
    int known = PySet_Contains(shapes, shape);
    if (known <= 0) return known;
    Py_ssize_t n, a = PyLong_AsSsize_t(o_start), b = PyLong_AsSsize_t(o_end);
    if (PyErr_Occurred()) return -1;
    const char *s;
    int kind = text_bytes(text, &s, &n);
    if (kind <= 0) return kind;
    if (a < 0 || b > n || a > b) return 0;
    if (PyUnicode_CompareWithASCIIString(opcode, "parameter") != 0 &&
        PyUnicode_CompareWithASCIIString(opcode, "constant") != 0) {
        Py_ssize_t starts[64], ends[64];
        Py_ssize_t count = operand_spans(s, a, b, starts, ends, 64);
        if (count < 0 || count > 64) return 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *operand = substring(s, starts[i], ends[i]);
            if (operand == NULL) return -1;
            int found = PySet_Contains(names, operand);
            Py_DECREF(operand);
            if (found <= 0) return found;
        }
    }
    PyObject *spans = spans_at(text, b + 1);
    if (spans == NULL) return -1;
    if (spans == Py_None) {
        Py_DECREF(spans);
        return 0;
    }
    int result = 1, called = 0;
    Py_ssize_t position = 0;
    PyObject *key, *span;
    while (result == 1 && PyDict_Next(spans, &position, &key, &span)) {
        for (int k = 0; CALLED_KEYS[k] != NULL && !called; k++)
            called = PyUnicode_CompareWithASCIIString(key, CALLED_KEYS[k]) == 0;
        PyObject *convert = PyDict_GetItemWithError(converters, key);
        if (convert == NULL) {
            if (PyErr_Occurred()) result = -1;
            continue;
        }
        Py_ssize_t x = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        Py_ssize_t y = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        PyObject *value = substring(s, x, y);
        PyObject *converted = value ? PyObject_CallOneArg(convert, value) : NULL;
        Py_XDECREF(value);
        if (converted != NULL) {
            Py_DECREF(converted);
        } else if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyErr_Clear();  /* Python converts it again and reports it, located */
            result = 0;
        } else {
            result = -1;
        }
    }
    if (result == 1 && called) result = called_exist(s, n, b, spans, computations);
    Py_DECREF(spans);
    return result;
}

static PyObject *validate_run(PyObject *self, PyObject *args) {
    PyObject *instructions, *names, *shapes, *converters, *computations;
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "O!nO!O!O!O!", &PyList_Type, &instructions, &index, &PySet_Type,
                          &names, &PySet_Type, &shapes, &PyDict_Type, &converters, &PyDict_Type,
                          &computations))
        return NULL;
    if (instruction_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    while (index < PyList_GET_SIZE(instructions)) {
        int passed = validate_one(PyList_GET_ITEM(instructions, index), names, shapes,
                                  converters, computations);
        if (passed < 0) return NULL;
        if (!passed) break;
        index++;
    }
    return PyLong_FromSsize_t(index);
}

/* ---------------------------------------------------------------------------------------------
 * key_values(value) -> dict or None: attributes.key_values for a `{k="v" k2=bare, ...}` body
 * whose quoted values hold no backslash and whose bare values no brace (None for any other:
 * Python then reads it, errors included). */
static PyObject *key_values(PyObject *self, PyObject *args) {
    PyObject *value;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "U", &value)) return NULL;
    const char *s;
    int kind = text_bytes(value, &s, &n);
    if (kind < 0) return NULL;
    if (!kind || !text_is_plain(s, n)) Py_RETURN_NONE;
    Py_ssize_t a = 0, b = n;
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    if (b - a >= 2 && s[a] == '{' && s[b - 1] == '}') {
        a++;
        b--;
    }
    PyObject *found = PyDict_New();
    if (found == NULL) return NULL;
    Py_ssize_t p = a;
    for (;;) {
        while (p < b && (s[p] == ' ' || s[p] == ',' || s[p] == '\t' || s[p] == '\n')) p++;
        if (p >= b) return found;
        if (!is_name_start(s[p])) goto decline;
        Py_ssize_t k = p;
        while (p < b && is_name_char(s[p])) p++;
        Py_ssize_t k_end = p;
        if (p >= b || s[p] != '=') goto decline;
        p++;
        Py_ssize_t v, v_end;
        if (p < b && s[p] == '"') {
            Py_ssize_t q = p + 1;
            while (q < b && s[q] != '"' && s[q] != '\\') q++;
            if (q >= b || s[q] != '"') goto decline;
            v = p + 1;
            v_end = q;
            p = q + 1;
        } else {
            Py_ssize_t q = p;
            while (q < b && !is_space(s[q]) && s[q] != '}' && s[q] != '{' && s[q] != '"') q++;
            if (q == p || (q < b && (s[q] == '{' || s[q] == '"'))) goto decline;
            v = p;
            v_end = q;
            p = q;
        }
        PyObject *key = substring(s, k, k_end);
        PyObject *item = substring(s, v, v_end);
        int failed = key == NULL || item == NULL || PyDict_SetItem(found, key, item) < 0;
        Py_XDECREF(key);
        Py_XDECREF(item);
        if (failed) {
            Py_DECREF(found);
            return NULL;
        }
    }
decline:
    Py_DECREF(found);
    Py_RETURN_NONE;
}

/* --------------------------------------------------------------------------------------------- */
static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Instruction, its slot descriptors)."},
    {"fast_lines", fast_lines, METH_VARARGS, "TextParser.feed's one-line fast paths, in a run."},
    {"check_run", check_run, METH_VARARGS, "check_computation's body for a run of instructions."},
    {"split_simple", split_simple, METH_VARARGS, "attributes._split_simple, or None."},
    {"split_general", split_general, METH_VARARGS, "split_attributes' general path, or None."},
    {"attribute_spans", attribute_spans, METH_VARARGS, "Instruction._split_attributes, or None."},
    {"validate_run", validate_run, METH_VARARGS, "validate's body for a run of instructions."},
    {"key_values", key_values, METH_VARARGS, "attributes.key_values for plain bodies, or None."},
    {"plain_operands", plain_operands, METH_VARARGS, "a plain operand list's names, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan",
                                    "hloscope's optional C accelerator (see _scan.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__scan(void) {
    const char *names[8] = {"name", "opcode", "text", "operands_start", "operands_end",
                            "shape_text", "", "=called"};
    for (int i = 0; i < 8; i++) {
        attr_names[i] = PyUnicode_InternFromString(names[i]);
        if (attr_names[i] == NULL) return NULL;
    }
    return PyModule_Create(&module);
}
