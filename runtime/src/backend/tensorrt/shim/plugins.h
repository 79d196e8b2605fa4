// Registering TensorRT's standard plugins (libnvinfer_plugin), in a header of its own so that
// `shim_check.cpp` can check it against a stand-in for initLibNvInferPlugins. Include after
// logger.h.
#ifndef EDGERT_TRT_PLUGINS_H
#define EDGERT_TRT_PLUGINS_H

#include <mutex>
#include <string>

namespace edgert {

// The logger the plugin library logs through. initLibNvInferPlugins keeps the logger it is given
// for the rest of the process, so it is the process's own, never freed, rather than one of a
// runtime that a later `TensorrtBackend` drop would free.
inline Logger& plugin_logger() {
    static Logger* logger = new Logger();
    return *logger;
}

// Registers the plugins the first time a process asks, with `plugin_logger`; true when they are
// registered, else false with the reason, the same on every later call.
inline bool init_plugins_once(bool (*init)(void* logger, const char* plugin_namespace), std::string& reason) {
    static std::mutex lock;
    static int state = 0; // 0: not tried, 1: registered, -1: failed
    static std::string failure;
    std::lock_guard<std::mutex> guard(lock);
    if (state == 0) {
        Logger& logger = plugin_logger();
        logger.begin();
        state = init(static_cast<nvinfer1::ILogger*>(&logger), "") ? 1 : -1;
        if (state < 0) {
            failure = logger.take("no reason given");
        }
    }
    reason = failure;
    return state == 1;
}

} // namespace edgert

#endif
