#include <stdio.h>
#include <unistd.h>
unsigned secret_check(void);
int main(void){ unsigned last=0; for(int i=0;i<600;i++){ unsigned v=secret_check(); if(v!=last){printf("%d: secret_check() = 0x%x (uid %d)\n",i,v,getuid()); fflush(stdout); last=v;} usleep(100000);} return 0; }
