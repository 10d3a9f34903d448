/* UTF-8 checks for text the daemon puts into JSON itself: a name cut to a length by
 * printf's %.Ns can end mid-character, and a server's stderr is any bytes. json-c writes
 * a string's bytes as they are, so such text would make a line that is not valid JSON
 * text for the peer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence (1 to 4) at s, or 0 if none starts there. */
size_t utf8_sequence(const unsigned char *s, size_t len);

bool utf8_valid(const char *s, size_t len);

/* Makes s valid UTF-8 in place: an incomplete character at its end is cut, any other
 * invalid byte becomes '?'. Returns s. */
char *utf8_mend(char *s);

/* A peer's text (len bytes, any bytes) made fit to show: valid UTF-8 (an invalid byte
 * becomes '?'), without control characters (C0, DEL, C1) nor the invisible ones that
 * reorder or hide text (bidirectional marks, embeddings, overrides and isolates, zero
 * width characters), at most max bytes, cut between characters. malloc'd; NULL when out of
 * memory. */
char *utf8_display(const char *s, size_t len, size_t max);
