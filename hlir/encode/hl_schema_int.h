/* hl_schema_int.h - the schema texts embedded at build time (not public).
 *
 * hl_embed.cmake writes hl_encode_schema.c into the build folder from encode.egg and
 * encode_dtype.egg, byte for byte, as NUL-terminated byte arrays; edit the .egg
 * files, never a copy. hl_encode_schema() and hl_encode_dtype_rules() return them. */
#ifndef LUMINAL_HL_SCHEMA_INT_H
#define LUMINAL_HL_SCHEMA_INT_H

extern const unsigned char hl__encode_schema_text[];
extern const unsigned char hl__encode_dtype_text[];

#endif /* LUMINAL_HL_SCHEMA_INT_H */
