#ifndef MT_VERSION_H
#define MT_VERSION_H
#define MT_VERSION "0.1.0"
#endif
