/* The main() of layer_check_<layer> (CMakeLists.txt): the whole of one layer's library is
 * linked with the layers below it alone, so a symbol it takes from a layer above is
 * undefined and the build fails. */
int main(void)
{
        return 0;
}
