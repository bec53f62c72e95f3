// Greedy decoding through llama.cpp's C API, printing token ids (llama-simple prints only
// text), so the llm-engine bench can check that llama.cpp and Kiln's engine produce the same
// tokens from the same GGUF-converted model before it times either.
//
//   llamacpp-greedy MODEL.gguf N_PREDICT PROMPT_TEXT [PROMPT_IDS]
//
// PROMPT_TEXT is tokenized with the model's own (converted) tokenizer, special tokens added
// as the model says (BOS), and its ids are printed. Decoding starts from PROMPT_IDS when given
// (comma-separated), else from the tokenized text. Greedy: argmax of the logits, ties to the
// lowest id, no stop at end-of-generation tokens. Prints one JSON line:
//   {"prompt_ids":[...],"greedy_ids":[...]}

#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf N_PREDICT PROMPT_TEXT [PROMPT_IDS]\n", argv[0]);
        return 2;
    }
    const std::string path = argv[1];
    const int n_predict = atoi(argv[2]);
    const std::string text = argv[3];

    llama_log_set(quiet, nullptr);
    ggml_backend_load_all();
    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(path.c_str(), mparams);
    if (model == nullptr) {
        fprintf(stderr, "cannot load %s\n", path.c_str());
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);

    const int n_text = -llama_tokenize(vocab, text.c_str(), text.size(), nullptr, 0, true, true);
    std::vector<llama_token> text_ids(n_text);
    if (llama_tokenize(vocab, text.c_str(), text.size(), text_ids.data(), n_text, true, true) < 0) {
        fprintf(stderr, "cannot tokenize the prompt\n");
        return 1;
    }
    std::vector<llama_token> prompt = text_ids;
    if (argc > 4) {
        prompt.clear();
        std::string ids = argv[4];
        size_t start = 0;
        while (start < ids.size()) {
            size_t end = ids.find(',', start);
            if (end == std::string::npos) end = ids.size();
            prompt.push_back(atoi(ids.substr(start, end - start).c_str()));
            start = end + 1;
        }
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = prompt.size() + n_predict + 8;
    cparams.n_batch = prompt.size();
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == nullptr) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> out;
    llama_batch batch = llama_batch_get_one(prompt.data(), prompt.size());
    llama_token next = 0;
    for (int i = 0; i < n_predict; i++) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llama_decode failed at step %d\n", i);
            return 1;
        }
        const float * logits = llama_get_logits_ith(ctx, -1);
        next = 0;
        for (int t = 1; t < n_vocab; t++)
            if (logits[t] > logits[next]) next = t;
        out.push_back(next);
        batch = llama_batch_get_one(&next, 1);
    }

    printf("{\"prompt_ids\":[");
    for (size_t i = 0; i < text_ids.size(); i++) printf("%s%d", i ? "," : "", text_ids[i]);
    printf("],\"greedy_ids\":[");
    for (size_t i = 0; i < out.size(); i++) printf("%s%d", i ? "," : "", out[i]);
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
