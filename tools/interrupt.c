/* SIGINT and SIGTERM during training: the handler only records the signal
 * (async-signal-safe: a sig_atomic_t store and write(2)); the training loop
 * sees it between steps, finishes the step in flight, writes the checkpoint,
 * the summary and the outputs, and exits 130. A second signal means "now":
 * the handler exits at once with _exit. */
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t pending;

static void on_signal(int sig) {
    (void)sig;
    if (pending) {
        static const char msg[] = "\nlazytensor: second interrupt: exiting now\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(CLI_INTERRUPTED);
    }
    pending = 1;
    static const char msg[] = "\nlazytensor: interrupted: finishing the step, then saving (interrupt again to "
                              "quit at once)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

void interrupt_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* a read or write in flight carries on; the loop polls the flag */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool interrupted(void) { return pending != 0; }
