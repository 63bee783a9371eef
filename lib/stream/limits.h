/* limits: the sizes the stream's text and binary forms keep to (a line,
 * a message, an extra column's key and value). Internal to stream/. */
#ifndef MT_STREAM_LIMITS_H
#define MT_STREAM_LIMITS_H

#define LINE_MAX_BYTES 4096
#define MSG_MAX 1024
#define EXTRA_KEY_MAX 128
#define EXTRA_VAL_MAX 4096

#endif
